"""Fleet runs: a range sharded over Ray nodes, merged into one results tree."""
