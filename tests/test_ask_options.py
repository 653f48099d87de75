"""The options the ask commands share (spatialprobe/commands/engine_options.py): each command takes
them with the same flag, help and default, and a value that does not read is refused in one
sentence before the command reads any data or writes its run folder."""

import pytest
import typer
from typer.testing import CliRunner

from spatialprobe.cli import app
from spatialprobe.commands.engine_options import ASK_OPTIONS

COMMANDS = {  # command -> the arguments it needs besides the shared options (none of them exists)
    ("bench",): ["whatsup", "--model", "m", "--data", "missing.json"],
    ("vsr",): ["--model", "m", "--data", "missing", "--images", "missing"],
    ("spatialmqa",): ["--model", "m", "--data", "missing", "--images", "missing"],
    ("qa", "text"): ["--model", "m", "--task", "size"],
    ("qa", "image"): ["--model", "m", "--images", "missing"],
}
BAD = [(["--scorer-arg", "nokey"], "--scorer-arg takes key=value, not 'nokey'."),
       (["--max-memory", "zz"], "--max-memory takes DEVICE=SIZE"),
       (["--protocol-variants", "nope"], "--protocol-variants 'nope' is no variant the engine generates")]


def _command(path: tuple[str, ...]):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


@pytest.mark.parametrize("path", list(COMMANDS))
def test_every_shared_option_a_command_takes_has_the_bundles_flag_help_and_default(path):
    params = {p.name: p for p in _command(path).params}
    shared = [name for name in ASK_OPTIONS if name in params]
    assert {"protocol", "max_new_tokens", "scorer_arg", "device_map", "max_memory", "backend"} <= set(shared)
    for name in shared:
        option = ASK_OPTIONS[name][1]
        assert params[name].opts[0] == option.param_decls[0] and params[name].help == option.help
        assert params[name].default == option.default


def _flags(path: tuple[str, ...]) -> set[str]:
    return {flag for param in _command(path).params for flag in param.opts}


@pytest.mark.parametrize("path, bad, said", [(path, bad, said) for path in COMMANDS for bad, said in BAD
                                             if bad[0] in _flags(path)])
def test_a_shared_option_that_does_not_read_is_refused_before_any_data(path, bad, said, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [*path, *COMMANDS[path], "--out", str(out), *bad])
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output
    assert not out.exists()
