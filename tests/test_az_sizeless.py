"""A sizeless AZ network: the same weights play every board, and on each its logits line up with
that board's action layout (the engine's own decoding of every action id)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agents.az.network import MAX_DISTANCE, AZNet  # noqa: E402
from tafl_env.game import engine_for  # noqa: E402
from tafl_env.rules import make_rules  # noqa: E402

BOARDS = {"legacy_ard_ri": 7, "historical_tablut": 9, "legacy_tawlbwrdd": 11, "legacy_alea_evangelii": 19}


def _probe(net, variant):
    n = BOARDS[variant]
    with torch.no_grad():
        logits, value = net(torch.zeros(1, n, n, 14))
    eng = engine_for(make_rules(variant))
    actions = np.arange(eng.num_actions - 1)
    origin, direction, distance, target = (np.asarray(x) for x in eng.decode(actions))
    return eng, logits[0, :-1].numpy(), origin, direction, distance, target


@pytest.mark.parametrize("variant", list(BOARDS))
def test_the_origin_map_is_read_by_direction_and_distance(variant):
    net = AZNet(11, channels=4, blocks=0, head="sizeless")
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        # bias of the origin map: 1000 * direction + distance, the same on every square
        net.policy_out.bias.copy_(torch.tensor([1000.0 * d + k for d in range(4) for k in range(1, MAX_DISTANCE + 1)]))
    eng, logits, origin, direction, distance, target = _probe(net, variant)
    assert np.array_equal(logits, 1000.0 * direction + distance)


@pytest.mark.parametrize("variant", list(BOARDS))
def test_the_target_map_is_read_at_each_moves_target_square(variant):
    n = BOARDS[variant]
    net = AZNet(11, channels=14, blocks=0, head="sizeless")
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        # a trunk that passes plane 0 through, and a target map of 1 + direction where plane 0 is set
        net.stem.weight[0, 0, 1, 1] = 1.0
        net.policy_conv.weight[0, 0, 0, 0] = 1.0
        net.policy_dest.weight[:, 0, 0, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    marked = np.zeros((n, n), dtype=bool)
    marked[0, :] = marked[:, n - 1] = True           # rank 1 and the last file
    obs = torch.zeros(1, n, n, 14)
    obs[0, :, :, 0] = torch.from_numpy(marked.astype(np.float32))
    with torch.no_grad():
        logits = net(obs)[0][0, :-1].numpy()
    eng = engine_for(make_rules(variant))
    origin, direction, distance, target = (np.asarray(x) for x in eng.decode(np.arange(eng.num_actions - 1)))
    on = target < n * n
    hit = np.zeros(len(target), dtype=bool)
    hit[on] = marked.reshape(-1)[target[on]]
    assert np.array_equal(logits, np.where(hit, 1.0 + direction, 0.0))


def test_the_same_weights_play_every_board_and_load_into_a_network_of_another_size():
    small = AZNet(7, channels=8, blocks=1, head="sizeless")
    large = AZNet(19, channels=8, blocks=1, head="sizeless")
    large.load_state_dict(small.state_dict())            # no tensor depends on the board's size
    assert {k: tuple(v.shape) for k, v in small.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in large.state_dict().items()}
    for n in (7, 11, 19):
        logits, value = large(torch.rand(2, n, n, 14))
        assert logits.shape == (2, n * n * 4 * (n - 1) + 1) and value.shape == (2,)
    board = AZNet(7, channels=8, blocks=1)
    with pytest.raises(RuntimeError):
        AZNet(9, channels=8, blocks=1).load_state_dict(board.state_dict())   # a board head does not
    assert small.shape()["head"] == "sizeless" and "head" not in board.shape()


def test_a_run_starts_from_a_sizeless_model_of_another_board(tmp_path):
    from agents.az.checkpoint import save_model
    from agents.az.config import validate_az_config
    from agents.az.train import _Run
    from agents.schema import ConfigError
    from tafl_env.rules import make_rules as rules

    small = AZNet(7, channels=4, blocks=1, value_hidden=8, head="sizeless")
    path = save_model(tmp_path / "ardri.pt", small, rules("legacy_ard_ri"))
    base = {"backend": "az", "variant": "historical_tablut", "iterations": 1, "channels": 4, "blocks": 1,
            "value_hidden": 8, "head": "sizeless", "init_model": str(path)}
    run = _Run(validate_az_config(base), tmp_path / "run", "cpu", None)
    assert all(torch.equal(run.net.state_dict()[k], v) for k, v in small.state_dict().items())
    with pytest.raises(ConfigError, match="init_model.*must be sizeless"):
        _Run(validate_az_config({**base, "head": "board"}), tmp_path / "run2", "cpu", None)
