"""One error vocabulary, caught once: cli.main turns every SpatialprobeError into one sentence and
exit 2, a CUDA out-of-memory and a full or read-only disk into sentences of their own, and leaves
any other exception (a bug) its traceback."""

from __future__ import annotations

import errno

import pytest

from spatialprobe import cli, errors

VOCABULARY = (errors.UsageError, errors.DataError, errors.ModelLoadError, errors.RunInUse,
              errors.UnknownComponent, errors.MissingExtra, errors.OutputError)


def _main_raising(monkeypatch, exc: BaseException) -> None:
    def app() -> None:
        raise exc

    monkeypatch.setattr(cli, "app", app)
    cli.main()


@pytest.mark.parametrize("exc", [
    errors.UsageError("--folds must be at least 2."),
    errors.DataError("data.jsonl", 5, "label", "'x' is not a size label"),
    errors.ModelLoadError("Could not load the masked LM '/nope': there is no such local directory."),
    errors.RunInUse("runs/x is in use by another spatialprobe process (pid 7)"),
    errors.UnknownComponent("Unknown model 'bert'. Did you mean 'hf-mlm'?"),
    errors.MissingExtra("diffusers", "synthesis", "Image synthesis"),
    errors.OutputError("--out model is not a spatialprobe run"),
], ids=lambda e: type(e).__name__)
def test_every_refusal_is_one_sentence_and_exit_2(monkeypatch, capsys, exc):
    with pytest.raises(SystemExit) as done:
        _main_raising(monkeypatch, exc)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err == f"Error: {exc}\n" and "Traceback" not in err


def test_the_vocabulary_is_one_base_and_keeps_the_builtin_bases():
    for cls in VOCABULARY:
        assert issubclass(cls, errors.SpatialprobeError)
    assert issubclass(errors.DataError, ValueError) and issubclass(errors.UnknownComponent, KeyError)
    assert str(errors.DataError("f.csv", 3, "obj_a", "empty")) == "f.csv, line 3, field 'obj_a': empty"
    assert str(errors.UnknownComponent("Unknown model 'x'.")) == "Unknown model 'x'."  # not KeyError's quotes


def test_cuda_out_of_memory_names_the_option_to_lower(monkeypatch, capsys):
    class OutOfMemoryError(RuntimeError):
        pass

    with pytest.raises(SystemExit) as done:
        _main_raising(monkeypatch, OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        "Error: the device ran out of memory. Lower --batch-size (or use a smaller model, --precision "
        "fp16/bf16 where the command takes it, or --device cpu); finished work is kept and a rerun resumes.\n")


@pytest.mark.parametrize(("code", "reason"), [(errno.ENOSPC, "the disk is full"),
                                              (errno.EROFS, "the file system is read-only")])
def test_a_full_or_read_only_disk_is_one_sentence_naming_the_path(monkeypatch, capsys, code, reason):
    with pytest.raises(SystemExit) as done:
        _main_raising(monkeypatch, OSError(code, "os says", "runs/x/summary.json"))
    assert done.value.code == 2
    assert capsys.readouterr().err == (
        f"Error: cannot write runs/x/summary.json: {reason}. Finished work is kept; free space or choose "
        "another --out, and run the same command again to resume.\n")


@pytest.mark.parametrize("exc", [KeyError("folds"), ValueError("bug"), RuntimeError("shape mismatch"),
                                 OSError(errno.ENOENT, "no such file")], ids=repr)
def test_anything_else_is_a_bug_and_keeps_its_traceback(monkeypatch, exc):
    with pytest.raises(type(exc)):
        _main_raising(monkeypatch, exc)


def test_commands_refuse_in_one_idiom():
    """A command refuses by raising a SpatialprobeError (the CLI's one catcher prints the sentence
    and exits 2); no command prints its own error and exits, nor raises click's BadParameter."""
    import ast
    from pathlib import Path

    root = Path(cli.__file__).parent / "commands"
    found = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("BadParameter", "Exit", "exit", "Abort"):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.Name) and node.id in ("SystemExit", "fail", "refusals"):
                found.append(f"{path.name}:{node.lineno} {node.id}")
    assert not found, "refuse by raising spatialprobe.errors.UsageError instead: " + "; ".join(found)


def test_a_refusal_raised_in_a_command_is_one_sentence_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    result = CliRunner().invoke(cli.app, ["probe", "nosuchtask", "--model", "dummy", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].startswith("Error: unknown task 'nosuchtask'")
