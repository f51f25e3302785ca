import pytest

from symlib.__main__ import main


def test_list(capsys):
    assert main(["list"]) == 0
    assert "mlp_map_pair" in capsys.readouterr().out


def test_unknown_experiment_and_profile(capsys):
    with pytest.raises(SystemExit):
        main(["run", "no_such_experiment"])
    assert "unknown experiment" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "mlp_map_pair", "--profile", "huge"])
    assert "valid profiles" in capsys.readouterr().err
