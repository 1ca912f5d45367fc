"""`torchpulse publish | serve`: the static site (torchpulse.site)."""

from __future__ import annotations

import argparse
from pathlib import Path

from torchpulse.cli.args import (
    EXIT_OK,
    add_alert_settings,
    add_config,
    alert_settings,
    port,
    project,
)
from torchpulse.site.serve import DEFAULT_HOST, DEFAULT_PORT


def cmd_publish(args: argparse.Namespace) -> int:
    from torchpulse.site import assets, publish

    asv_project = project(args).with_html_dir(args.html_dir)
    node_modules = assets.find_node_modules(args.assets, asv_project.root)
    html_dir = publish.publish(asv_project, node_modules, range_spec=args.range,
                               pull=not args.no_pull,
                               progress=lambda line: print(line, flush=True),
                               alert_settings={"settings": alert_settings(args)})
    print(f"site written to {html_dir}/ (self-contained); view it with "
          f"`torchpulse serve`, or copy the folder to any static host")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from torchpulse.site import serve

    html_dir = Path(args.html_dir) if args.html_dir else project(args).html_dir
    serve.serve(html_dir, args.host, args.port, announce=lambda line: print(line, flush=True))
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "publish", help="asv publish, made to work offline, plus torchpulse's summary page",
        description="Run asv publish, then copy the scripts and styles its pages load from "
        "CDNs into the site (from node_modules, installed by `npm ci`), point index.html at "
        "them, and add torchpulse.html (per machine: latest values, changes, noise and the "
        "alert report), linked from asv's navigation bar. The site is built beside html_dir "
        "and replaces it only when complete. Exit 2 when an asset is missing or asv fails.",
    )
    p.add_argument("range", nargs="?", help="commit range, as for asv publish")
    add_config(p, "the project to publish")
    p.add_argument("--html-dir", "-o", help="output directory (default: the config's html_dir)")
    p.add_argument("--no-pull", action="store_true", help="do not pull the repository")
    p.add_argument("--assets", metavar="DIR", help="node_modules folder with the site's "
                   "assets (default: $TORCHPULSE_ASSETS, else the project's node_modules, "
                   "else torchpulse's checkout's)")
    add_alert_settings(p)  # the summary page's verdicts: as `alert` would give them
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser(
        "serve", help="serve the published site over HTTP on loopback",
        description="Serve the published site (asv's pages need HTTP; file:// does not "
        "work) until Ctrl-C. Binds 127.0.0.1 unless --host says otherwise; prints the URL.",
    )
    add_config(p, "the project whose html_dir to serve")
    p.add_argument("--html-dir", help="serve this directory instead")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default: "
                   f"{DEFAULT_HOST}; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=port, default=DEFAULT_PORT,
                   help=f"port (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.set_defaults(func=cmd_serve)
