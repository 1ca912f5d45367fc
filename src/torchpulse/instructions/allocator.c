/* torchpulse's allocator for counted processes (preloaded: instructions/allocator.py).
 *
 * A malloc whose cost in instructions does not depend on where blocks lie. glibc's does:
 * its aligned allocations (every tensor's storage) cut a block out of a larger free one and
 * free the pieces, whose merging depends on their neighbours, so a count moved by up to
 * 0.64 % when an edit elsewhere moved the heap (docs/instructions.md, "Determinism").
 *
 * Segregated size classes (four per power of two), a LIFO free list per class, a bump
 * pointer over 64 MB chunks; no splitting, no coalescing, no searching: a call is a pop or
 * a bump, or a push. Every block starts 64-byte aligned and requests of 256 bytes and more
 * get 64-byte aligned pointers, so memcpy and memset take the same path whatever the
 * address. Blocks of 16 MB and more are mappings of their own. Memory is never given back
 * but for those: a counted process lives for one count.
 *
 * Built with -fno-builtin: otherwise the compiler turns calloc's malloc and memset into a
 * call to calloc.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define HEADER 16
#define CHUNK ((size_t)64 << 20)
#define LARGE ((size_t)16 << 20) /* blocks this size and above: an mmap of their own */
#define CLASSES 200
#define BIG_CLASS 0xffffffffu
#define WIDE 256 /* requests this size and above are 64-byte aligned */
#define MAX_ALIGN ((size_t)1 << 30) /* the header keeps the offset to the block in 32 bits */

#if defined(__x86_64__) || defined(__i386__)
#define RELAX() __builtin_ia32_pause()
#else
#define RELAX() ((void)0)
#endif

struct header {
    uint64_t size;   /* the block's size (its class's, or the mapping's) */
    uint32_t klass;  /* its class, or BIG_CLASS */
    uint32_t back;   /* user pointer minus block start */
};

static void *free_lists[CLASSES];
static char *bump, *bump_end;
static volatile int lock_word;

static void lock(void) {
    while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
        while (lock_word) RELAX();
}
static void unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static unsigned class_of(size_t n) { /* n >= 1 */
    if (n <= 64) return 0;
    unsigned lg = 63 - __builtin_clzl(n - 1);
    unsigned sub = ((n - 1) >> (lg - 2)) & 3;
    return (lg - 6) * 4 + sub + 1;
}
static size_t class_size(unsigned c) {
    if (c == 0) return 64;
    c -= 1;
    unsigned lg = c / 4 + 6, sub = c % 4;
    return ((size_t)1 << lg) + ((size_t)(sub + 1) << (lg - 2));
}

static void *map(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* a block of at least n bytes (n counts header and alignment slack), 64-byte aligned */
static char *block(size_t n, uint32_t *klass, uint64_t *size) {
    if (n >= LARGE) {
        size_t total = (n + 4095) & ~(size_t)4095;
        *klass = BIG_CLASS;
        *size = total;
        return map(total);
    }
    unsigned c = class_of(n);
    size_t sz = class_size(c);
    size_t carved = (sz + 63) & ~(size_t)63; /* every block starts 64-aligned */
    *klass = c;
    *size = sz;
    lock();
    char *p = free_lists[c];
    if (p) {
        free_lists[c] = *(void **)p;
    } else {
        if (bump + carved > bump_end) {
            char *fresh = map(CHUNK);
            if (!fresh) { unlock(); return NULL; }
            bump = fresh;
            bump_end = fresh + CHUNK;
        }
        p = bump;
        bump += carved;
    }
    unlock();
    return p;
}

static void *aligned(size_t align, size_t n) {
    if (n > ((size_t)1 << 46)) { errno = ENOMEM; return NULL; }
    /* room for the header before a user pointer aligned to `align` */
    size_t slack = align <= HEADER ? HEADER : align;
    uint32_t klass;
    uint64_t size;
    char *base = block(n + slack, &klass, &size);
    if (!base) { errno = ENOMEM; return NULL; }
    char *user = base + slack; /* base is 64-aligned; slack a multiple of align */
    if (align > 64) user = (char *)(((uintptr_t)base + HEADER + align - 1) & ~(uintptr_t)(align - 1));
    struct header *h = (struct header *)(user - HEADER);
    h->size = size;
    h->klass = klass;
    h->back = (uint32_t)(user - base);
    return user;
}

void *malloc(size_t n) { return aligned(n >= WIDE ? 64 : HEADER, n ? n : 1); }

void free(void *u) {
    if (!u) return;
    struct header *h = (struct header *)((char *)u - HEADER);
    char *base = (char *)u - h->back;
    if (h->klass == BIG_CLASS) { munmap(base, h->size); return; }
    lock();
    *(void **)base = free_lists[h->klass];
    free_lists[h->klass] = base;
    unlock();
}

size_t malloc_usable_size(void *u) {
    if (!u) return 0;
    struct header *h = (struct header *)((char *)u - HEADER);
    return h->size - h->back;
}

void *calloc(size_t count, size_t n) {
    size_t total;
    if (__builtin_mul_overflow(count, n, &total)) { errno = ENOMEM; return NULL; }
    void *p = malloc(total);
    if (p) memset(p, 0, total);
    return p;
}

void *realloc(void *u, size_t n) {
    if (!u) return malloc(n);
    if (n == 0) { free(u); return NULL; }
    size_t have = malloc_usable_size(u);
    if (n <= have && (n < WIDE || ((struct header *)((char *)u - HEADER))->back >= 64)) return u;
    void *p = malloc(n);
    if (!p) return NULL;
    memcpy(p, u, n < have ? n : have);
    free(u);
    return p;
}

void *memalign(size_t align, size_t n) {
    if (align == 0 || (align & (align - 1)) || align > MAX_ALIGN) { errno = EINVAL; return NULL; }
    if (align < 64 && n >= WIDE) align = 64;
    return aligned(align < HEADER ? HEADER : align, n ? n : 1);
}
void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1)) || align > MAX_ALIGN) return EINVAL;
    void *p = memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void *valloc(size_t n) { return memalign(4096, n); }
void *pvalloc(size_t n) { return memalign(4096, (n + 4095) & ~(size_t)4095); }

/* a fork while another thread holds the lock must not leave the child locked */
static void child_unlock(void) { lock_word = 0; }
__attribute__((constructor)) static void install(void) { pthread_atfork(lock, unlock, child_unlock); }
