"""``spatialprobe import FORMAT PATH...`` (other harnesses' per-item logs -> run folders,
:mod:`spatialprobe.interop`) and ``spatialprobe export RUN...`` (runs -> one long table, or
Every Eval Ever)."""

from __future__ import annotations

from pathlib import Path

import typer


def import_command(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="lm-eval, lmms-eval, vlmeval, inspect, eee or plain "
                              "(spatialprobe ls: import-format)."),
    paths: list[Path] = typer.Argument(..., help="The log files (samples, predictions, eval logs)."),
    out: Path = typer.Option(Path("runs/imported"), "--out",
                             help="Folder of the run folders (one per model x benchmark)."),
    id_field: str | None = typer.Option(None, "--id", help="plain: the field of the item id."),
    prediction: str | None = typer.Option(None, "--prediction", help="plain: the field of the prediction."),
    gold: str | None = typer.Option(None, "--gold", help="plain: the field of the gold answer."),
    records: str | None = typer.Option(None, "--records",
                                       help="plain: the key of the list of records in a JSON object."),
    cluster: list[str] = typer.Option([], "--cluster", help="The field naming each item's cluster (an image, a "
                                      "scene); two fields (obj_a,obj_b, or --cluster twice): a row of two objects, "
                                      "both its clusters. Without it (or --source) instances are the unit."),
    model: str | None = typer.Option(None, "--model", help="plain: the model's name \\[default: the file's name]."),
    benchmark: str | None = typer.Option(None, "--benchmark", help="plain: the benchmark's name."),
    metric: str | None = typer.Option(None, "--metric", help="Which verdict of the log is the number: lm-eval's "
                                      "acc_norm, lmms-eval's metric field, Inspect's scorer, eee's score, plain's "
                                      "verdict field, vlmeval's hit (the log's first, where it holds several)."),
    reply: str | None = typer.Option(None, "--reply", help="plain: the field of the generated reply (audit parse)."),
    question: str | None = typer.Option(None, "--question", help="plain: the field of the question (audit blind)."),
    options_field: str | None = typer.Option(None, "--options", help="plain: the field of the list of option "
                                             "texts, lettered A, B, ... (the audits)."),
    source: str | None = typer.Option(None, "--source", help="Join the items to the benchmark they were run on "
                                      "(vsr, spatialmqa, or any benchmark module: cv-bench, blink, ...): its item "
                                      "keys, clusters and official breakdown apply, and the runs pair with native "
                                      "ones."),
    data: Path | None = typer.Option(None, "--data", help="With --source: the benchmark's data file (its local "
                                     "copy)."),
) -> None:
    """Per-item logs of other harnesses become run folders that report, runs and export read."""
    from spatialprobe.errors import UsageError
    from spatialprobe.interop.imported_run import how_read, import_logs

    if (source is None) != (data is None):
        raise UsageError("--source and --data go together: the engine source and its data file.")
    if source is not None and cluster:
        raise UsageError("--cluster does not apply with --source: the source declares the clusters.")
    options = {"id": id_field, "prediction": prediction, "gold": gold, "records": records,
               "cluster": ",".join(cluster) if cluster else None,
               "model": model, "benchmark": benchmark, "metric": metric, "reply": reply, "question": question,
               "options": options_field}
    joined = {"name": source, "data": str(Path(str(data)).resolve())} if source else None
    for folder, summary in import_logs(fmt, paths, out, {k: v for k, v in options.items() if v}, joined):
        acc = summary["accuracy"]
        ci = acc.get("ci")
        interval = f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""
        details = summary["details"]
        typer.echo(f"{folder}: {summary['model']} on {summary['task']}: accuracy {acc['mean']:.2f}{interval} "
                   f"(n = {acc['n']}; unit: {details['unit']})" + "".join(f" {line}" for line in how_read(details)))


def export_command(
    runs: list[Path] = typer.Argument(..., help="Run folders (native or imported)."),
    fmt: str = typer.Option("csv", "--format", help="csv, parquet (one long table) or eee (Every Eval Ever)."),
    out: Path = typer.Option(..., "--out", help="The table's file (csv, parquet); a folder for eee."),
) -> None:
    """Every run's items as one long table (pandas reads it in one line) or in Every Eval Ever."""
    from spatialprobe.interop.eee import export_eee
    from spatialprobe.interop.export import export

    for path in (export_eee(runs, out) if fmt == "eee" else export(runs, fmt, out)):
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command("import")(import_command)
    app.command("export")(export_command)
