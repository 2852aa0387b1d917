"""``kraftwerk metadata show|rewrite``: read a metadata log as an image; write it at another version.

``show`` prints what a replayed ``__cluster_metadata-0`` directory (latest snapshot + the log after
it) or a single snapshot says: features with their epoch, brokers and controllers with their
supported ranges, topics and partitions, configs (secrets redacted), the ZK migration state.

``rewrite`` writes a KRaft snapshot of that image at a chosen metadata.version. Anything that
version cannot represent is a loss; without ``--unsafe`` a lossy rewrite is refused (exit 1)
and every loss is listed, which is KIP-778's "unsafe downgrade" made an offline, explicit step.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kraftwerk.cli.args import input_dir, input_file, output_file_or_dir, release_version
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.image.describe import describe_image, render_text
from kraftwerk.image.errors import loss_message
from kraftwerk.image.model import MetadataImage
from kraftwerk.image.snapshot import write_snapshot
from kraftwerk.image.source import load_log_dir, load_snapshot_file
from kraftwerk.image.writer import ImageWriterOptions, LossPolicy, image_losses
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.metadata_version import check_if_metadata_changed


def register(groups: Any) -> None:
    parser = groups.add_parser("metadata", help="inspect a metadata log as an image; rewrite it at a version")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)

    show = commands.add_parser(
        "show", help="print the metadata image of a log dir or snapshot",
        description="Replay a __cluster_metadata-0 directory (its latest snapshot and the log after "
                    "it) or one snapshot file, and print the resulting metadata image.")
    source = show.add_mutually_exclusive_group(required=True)
    source.add_argument("--log-dir", type=input_dir, metavar="DIR", help="a __cluster_metadata-0 directory")
    source.add_argument("--snapshot", type=input_file, metavar="FILE", help="a .checkpoint snapshot file")
    add_output_flag(show)
    show.set_defaults(func=_show)

    rewrite = commands.add_parser(
        "rewrite", help="write the image as a snapshot at another metadata.version",
        description="Replay a __cluster_metadata-0 directory and write its image as a KRaft snapshot "
                    "at the given metadata.version. Refuses when anything would be lost, unless "
                    "--unsafe is given.")
    rsource = rewrite.add_mutually_exclusive_group(required=True)
    rsource.add_argument("--log-dir", type=input_dir, metavar="DIR", help="a __cluster_metadata-0 directory")
    rsource.add_argument("--snapshot", type=input_file, metavar="FILE", help="a .checkpoint snapshot file")
    rewrite.add_argument("--metadata-version", required=True, type=release_version, metavar="VERSION",
                         help="target metadata.version, e.g. 3.7-IV0 or 3.7")
    rewrite.add_argument("--unsafe", action="store_true",
                         help="drop whatever the target version cannot represent (lossy)")
    rewrite.add_argument("--out", type=output_file_or_dir, required=True, metavar="FILE",
                         help="snapshot file to write (a directory gets Kafka's <offset>-<epoch>.checkpoint)")
    add_output_flag(rewrite)
    rewrite.set_defaults(func=_rewrite)


def _load(args: argparse.Namespace) -> MetadataImage:
    if args.log_dir is not None:
        return load_log_dir(args.log_dir)
    return load_snapshot_file(args.snapshot)


def _show(args: argparse.Namespace) -> int:
    desc = describe_image(_load(args))
    if args.output == "json":
        print_json(desc)
    else:
        for line in render_text(desc):
            print(line)
    return 0


def _rewrite(args: argparse.Namespace) -> int:
    target = mvs.parse_version_string(args.metadata_version, unstable=True,
                                      minimum=mvs.MINIMUM_KRAFT_VERSION)
    image = _load(args)
    source = image.metadata_version
    losses = image_losses(image, target)
    report: dict[str, Any] = {
        "sourceMetadataVersion": str(source) if source else None,
        "targetMetadataVersion": str(target),
        "metadataChanged": check_if_metadata_changed(source, target) if source else None,
        "losses": list(losses),
    }
    if losses and not args.unsafe:
        report["written"] = False
        if args.output == "json":
            print_json(report)
        else:
            print(loss_message(target, losses), file=sys.stderr)
            for loss in losses:
                print(f"  lost: {loss}", file=sys.stderr)
            print("Refusing to write a lossy snapshot; use --unsafe to drop this metadata.", file=sys.stderr)
        return 1
    policy = LossPolicy.DROP if args.unsafe else LossPolicy.REFUSE
    result = write_snapshot(image, args.out, ImageWriterOptions(target, policy))
    report.update({
        "written": True,
        "path": str(result.path),
        "snapshotId": {"endOffset": result.snapshot_id.end_offset, "epoch": result.snapshot_id.epoch},
        "records": len(result.write.records),
        "bytes": result.size_bytes,
    })
    if args.output == "json":
        print_json(report)
    else:
        print(f"Wrote {result.path} at metadata.version {target} "
              f"({len(result.write.records)} records, {result.size_bytes} bytes).")
        if losses:
            print(f"Dropped metadata that metadata.version {target} cannot represent:")
            for loss in losses:
                print(f"  lost: {loss}")
        else:
            print("No metadata was lost.")
    return 0
