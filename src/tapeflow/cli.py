"""The ``tapeflow`` command line: train from a YAML config, then evaluate, predict and inspect.

    tapeflow train configs/housing.yaml                 train; everything lands in runs/housing/
    tapeflow train configs/housing.yaml --resume        go on from the last good checkpoint
    mpiexec -n 2 tapeflow train configs/housing.yaml    data-parallel on 2 MPI ranks
    tapeflow evaluate runs/housing                      the test metrics of the trained model
    tapeflow predict runs/housing --input x.csv --output y.csv
    tapeflow inspect runs/housing                       architecture, optimizer, epoch, config
    tapeflow sweep configs/housing.yaml --grid training.batch_size=32,64   one run per value
    tapeflow export runs/housing --format onnx --output housing.onnx    for onnxruntime

A mistake in what you gave (a config key, a data file, a checkpoint) prints one
message and exits with status 2; nothing existing is overwritten.  A SIGTERM to
`tapeflow train` finishes the current step, writes a checkpoint and exits with
status 75; the same command with --resume goes on from it.  A file that cannot be written
(a read-only directory, a full disk, the file-size limit) prints one message naming it and
the OS error and exits with status 1; the last checkpoint written stays whole.
"""
import argparse
import sys

__all__ = ["main"]

USER_ERROR = 2
WRITE_FAILED = 1


def _cmd_train(args):
    from .training.run_config import dump_yaml, load_config
    from .training.errors import Preempted
    from .training.preemption import PREEMPTED_STATUS
    from .training.run import train

    overrides = list(args.set or [])
    if args.seed is not None:
        overrides.append(f"training.seed={args.seed}")
    if args.device is not None:
        overrides.append(f"device={args.device}")
    if args.print_config:
        print(dump_yaml(load_config(args.config, overrides).resolved()), end="")
        return 0
    try:
        train(args.config, output=args.output, resume=args.resume, overrides=overrides,
              allow_builder=args.allow_builder)
    except Preempted as e:
        if not getattr(e, "quiet", False):
            print(f"tapeflow train: {e}", file=sys.stderr)
        return PREEMPTED_STATUS
    return 0


def _cmd_sweep(args):
    from .training.sweep import parse_grid, sweep

    sweep(args.config, parse_grid(args.grid), overrides=list(args.set or []),
          output=args.output, jobs=args.jobs, allow_builder=args.allow_builder)
    return 0


def _cmd_evaluate(args):
    from .training.checkpoint import resolve_checkpoint
    from .training.inference import evaluate_checkpoint

    ckpt = resolve_checkpoint(args.checkpoint)
    results = evaluate_checkpoint(ckpt, split=args.split)
    print(f"{args.split} ({ckpt.path}): " + " - ".join(f"{k}: {v:.4f}" for k, v in results.items()))
    return 0


def _cmd_predict(args):
    from .training.checkpoint import resolve_checkpoint
    from .training.inference import predict_csv

    ckpt = resolve_checkpoint(args.checkpoint)
    y = predict_csv(ckpt, args.input, args.output, overwrite=args.overwrite)
    print(f"wrote {len(y)} predictions to {args.output}")
    return 0


def _cmd_inspect(args):
    from .training.checkpoint import resolve_checkpoint
    from .training.inference import describe_checkpoint

    for line in describe_checkpoint(resolve_checkpoint(args.checkpoint)):
        print(line)
    return 0


def _cmd_export(args):
    from .saving.onnx_export import OPSET
    from .training.export import export_to_onnx

    proto = export_to_onnx(args.path, args.output, overwrite=args.overwrite)
    print(f"wrote {args.output} (ONNX opset {OPSET}; inputs "
          f"{[i.name for i in proto.graph.input]}, outputs {[o.name for o in proto.graph.output]})")
    return 0


def _cmd_ops(args):
    from . import registered_primitives
    from .core.registry import NOT_DIFFERENTIABLE, lookup_gradient

    for name in sorted(registered_primitives()):
        rule = lookup_gradient(name)
        if rule is NOT_DIFFERENTIABLE:
            status = "not differentiable"
        elif rule is None:
            status = "NO GRADIENT (raises LookupError)"
        else:
            status = "gradient" + ("" if rule.vectorized else " (jacobian loops)")
        print(f"{name:32s} {status}")
    return 0


CHECKPOINT_HELP = "a checkpoint file, or a run directory (its final model, else its last good " \
                  "checkpoint)"


def _parser():
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="tapeflow", description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tapeflow {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser(
        "train", help="train a model from a YAML config",
        description="Train the model a YAML config describes. The run directory gets the "
                    "resolved config (seed included), checkpoints, history.csv/json, "
                    "learning_curve.png, test_metrics.json and model.h5. On SIGTERM (what "
                    "a scheduler sends before it kills a job) it finishes the current step, "
                    "writes a checkpoint and exits with status 75 (2: a mistake in what was "
                    "given); rerun the same command with --resume to go on.")
    train.add_argument("config", metavar="CONFIG.yaml", help="the run config (see configs/)")
    train.add_argument("--set", action="append", metavar="KEY.PATH=VALUE",
                       help="override one config value, parsed as YAML and validated like the "
                            "file (repeatable), e.g. --set training.epochs=5")
    train.add_argument("--output", metavar="DIR",
                       help="the run directory (default: runs/<config name>)")
    train.add_argument("--resume", action="store_true",
                       help="continue the run in --output from its last good checkpoint (a "
                            "missing or empty --output starts the run: a preemptible job can "
                            "run the same command every time)")
    train.add_argument("--seed", type=int, metavar="N", help="set training.seed")
    train.add_argument("--device", choices=["cpu", "gpu"], help="set device")
    train.add_argument("--print-config", action="store_true",
                       help="print the resolved config (defaults filled in) and exit")
    train.add_argument("--allow-builder", action="store_true",
                       help="allow model.builder to run the Python code it names")
    train.set_defaults(run=_cmd_train)

    sweep = sub.add_parser(
        "sweep", help="train every combination of a grid of config values",
        description="Train one run per combination of the --grid values (each a --set on "
                    "CONFIG), in DIR/run-NN-<values>; every combination is checked first. A "
                    "rerun of the same command trains only what is not finished (a run with "
                    "test_metrics.json is done; others resume). DIR gets summary.csv and "
                    "summary.png: each run's values and test metrics, best test loss first.")
    sweep.add_argument("config", metavar="CONFIG.yaml", help="the run config (see configs/)")
    sweep.add_argument("--grid", action="append", required=True,
                       metavar="KEY.PATH=V1,V2,...",
                       help="a config key and its values (repeatable: the runs are every "
                            "combination), e.g. --grid training.batch_size=32,64")
    sweep.add_argument("--set", action="append", metavar="KEY.PATH=VALUE",
                       help="override one config value in every run (repeatable)")
    sweep.add_argument("--output", metavar="DIR",
                       help="the sweep's directory (default: runs/<config name>-sweep)")
    sweep.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="train N runs at a time in separate processes (default 1: one "
                            "after another in this process)")
    sweep.add_argument("--allow-builder", action="store_true",
                       help="allow model.builder to run the Python code it names")
    sweep.set_defaults(run=_cmd_sweep)

    evaluate = sub.add_parser("evaluate", help="metrics of a trained model on its run's data",
                              description="Evaluate a checkpoint on a split of its run's data.")
    evaluate.add_argument("checkpoint", metavar="CKPT", help=CHECKPOINT_HELP)
    evaluate.add_argument("--split", choices=["test", "valid", "train"], default="test")
    evaluate.set_defaults(run=_cmd_evaluate)

    predict = sub.add_parser(
        "predict", help="predict for the rows of a CSV file",
        description="Predict for each row of a CSV file whose header names the model's "
                    "feature columns (raw units; other columns are ignored).")
    predict.add_argument("checkpoint", metavar="CKPT", help=CHECKPOINT_HELP)
    predict.add_argument("--input", required=True, metavar="FILE.csv")
    predict.add_argument("--output", required=True, metavar="PREDS.csv")
    predict.add_argument("--overwrite", action="store_true",
                         help="replace PREDS.csv if it exists (never a file of a run directory)")
    predict.set_defaults(run=_cmd_predict)

    inspect = sub.add_parser("inspect", help="describe a checkpoint",
                             description="Print a checkpoint's architecture, parameter counts, "
                                         "optimizer, epoch, metrics, custom gradients and config.")
    inspect.add_argument("checkpoint", metavar="CKPT", help=CHECKPOINT_HELP)
    inspect.set_defaults(run=_cmd_inspect)

    export = sub.add_parser(
        "export", help="write a trained model as an ONNX file",
        description="Write a run's trained model (or a checkpoint, or a SavedModel directory "
                    "from tf.saved_model.save / model.export) as an ONNX file for onnxruntime: "
                    "its inference graph, the batch dimension dynamic. An op with no ONNX form "
                    "is refused by name.")
    export.add_argument("path", metavar="RUN_DIR_OR_SAVE",
                        help=CHECKPOINT_HELP + ", or a SavedModel directory")
    export.add_argument("--format", choices=["onnx"], default="onnx")
    export.add_argument("--output", required=True, metavar="MODEL.onnx")
    export.add_argument("--overwrite", action="store_true", help="replace MODEL.onnx if it exists")
    export.set_defaults(run=_cmd_export)

    ops = sub.add_parser("ops", help="list the registered ops and whether each has a gradient")
    ops.set_defaults(run=_cmd_ops)
    return parser


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return USER_ERROR
    from .saving.atomic import WriteError
    from .training.errors import UserError
    try:
        return args.run(args)
    except WriteError as e:
        print(f"tapeflow {args.command}: error: {e}", file=sys.stderr)
        return WRITE_FAILED
    except UserError as e:
        if not getattr(e, "quiet", False):  # under MPI, rank 0 prints what every rank raised
            print(f"tapeflow {args.command}: error: {e}", file=sys.stderr)
        return USER_ERROR
    except KeyboardInterrupt:
        print(f"tapeflow {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
