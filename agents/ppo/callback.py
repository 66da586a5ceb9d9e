"""The training loop's callback: snapshots, opponent draws, league statistics, evaluations,
checkpoints, the time limit and the progress bar (:func:`make_callback`)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from tafl_env.rules import SIDES

from ..evaluation.learning_curve import evaluate_agent, write_evals
from ..model_rules import model_info
from ..train_fields import rules_of
from .checkpoints import POOL_SUFFIX, save_pool
from .league import state_dict_copy
from .policy import NetAgent

__all__ = ["make_callback"]


def make_callback(cfg, out_dir: Path, venv, groups, pool: list, frozen, state: dict, progress: bool):
    from stable_baselines3.common.callbacks import BaseCallback

    class LeagueCallback(BaseCallback):
        """Snapshots, opponent draws, league stats, evaluations, checkpoints, time limit, progress."""

        def _on_training_start(self) -> None:
            self.t0 = time.time() - state.get("minutes", 0.0) * 60
            self.rng = np.random.default_rng(cfg["seed"] + 1009 * (1 + len(state.get("evals", []))))
            self.next_snapshot = state.get("next_snapshot", cfg["snapshot_every"])
            self.next_eval = state.get("next_eval", cfg["eval_every"] or math.inf)
            self.next_ckpt = state.get("next_ckpt", cfg["checkpoint_every"] or math.inf)
            self.stats = {}
            self.bar = None
            if progress:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=cfg["total_timesteps"], initial=self.num_timesteps, unit="step",
                                desc=f"train {cfg['variant']}", dynamic_ncols=True, mininterval=2.0)

        def _minutes(self) -> float:
            return (time.time() - self.t0) / 60

        def _on_rollout_start(self) -> None:
            if "snapshot" in groups and pool:
                k = int(self.rng.integers(len(pool)))
                frozen.load(pool[k])
                self.logger.record("league/snapshot_drawn", k)

        def _on_step(self) -> bool:
            infos = self.locals["infos"]
            for part_i, sl in enumerate(venv.slices()):
                g = groups[part_i]
                for info in infos[sl]:
                    if "winner" in info:
                        side = SIDES[info["side"]]
                        w = info["winner"]
                        key = (g, side)
                        s = self.stats.setdefault(key, [0, 0, 0, 0])   # games, wins, draws, turns
                        s[0] += 1
                        s[1] += int(w == info["side"])
                        s[2] += int(w == 2)
                        s[3] += info["turns"]
            n = self.num_timesteps
            if self.bar is not None:
                self.bar.update(n - self.bar.n)
            if n >= self.next_snapshot:
                pool.append(state_dict_copy(self.model.policy))
                del pool[:-cfg["pool_size"]]
                self.next_snapshot += cfg["snapshot_every"]
            if n >= self.next_eval:
                self.evaluate(cfg["eval_games"])
                self.next_eval += cfg["eval_every"]
            if n >= self.next_ckpt:
                self.checkpoint()
                self.next_ckpt += cfg["checkpoint_every"]
            if cfg["max_minutes"] is not None and self._minutes() >= cfg["max_minutes"]:
                state["stopped"] = f"time limit of {cfg['max_minutes']} minutes"
                return False
            return True

        def _on_rollout_end(self) -> None:
            for (g, side), (n, w, d, turns) in self.stats.items():
                self.logger.record(f"league/{g}_{side}_win_rate", w / n)
                self.logger.record(f"league/{g}_{side}_games", n)
                self.logger.record(f"league/{g}_{side}_mean_turns", turns / n)
            self.stats = {}
            self.logger.record("time/minutes", self._minutes())

        def evaluate(self, games: int, final: bool = False) -> dict:
            agent = NetAgent(self.model.policy, deterministic=cfg["eval_deterministic"])
            self.model.policy.set_training_mode(False)
            idx = len(state["evals"])
            ev = evaluate_agent(agent, cfg, games, seed=cfg["seed"] + 7919 * (idx + 1), progress=progress,
                                desc="final evaluation" if final else f"evaluation at step {self.num_timesteps}",
                                leave=final)
            minutes = self._minutes()
            rec = {"timesteps": int(self.num_timesteps), "minutes": round(minutes, 2), "games_per_side": games,
                   "final": final, "results": ev}
            state["evals"].append(rec)
            for opp, sides in ev.items():
                for side, r in sides.items():
                    self.logger.record(f"eval/{opp}_{side}_win_rate", r["win_rate"])
                    self.logger.record(f"eval/{opp}_{side}_score", r["score"])
            self.logger.record("eval/timesteps", int(self.num_timesteps))   # the row's step in progress.csv
            self.logger.dump(self.num_timesteps)
            write_evals(out_dir, state["evals"])
            if self.bar is not None:
                msg = " ".join(f"{o}:{s['both']['win_rate']:.2f}" for o, s in ev.items())
                self.bar.set_postfix_str(f"eval {msg}")
            return rec

        def checkpoint(self) -> Path:
            ck = out_dir / "checkpoints"
            ck.mkdir(parents=True, exist_ok=True)
            path = ck / f"step_{self.num_timesteps}.zip"
            self.model.save(path)
            every = cfg["checkpoint_every"]
            state.update(minutes=self._minutes(), next_snapshot=self.next_snapshot, next_eval=self.next_eval,
                         next_ckpt=(self.num_timesteps // every + 1) * every if every else math.inf)
            # tensors and plain values only: resuming reads it with torch.load(weights_only=True)
            save_pool(path.with_suffix(POOL_SUFFIX), pool,
                      {**{k: v for k, v in state.items() if k != "evals"}, "timesteps": int(self.num_timesteps),
                       "rules": model_info(rules_of(cfg))})
            return path

        def _on_training_end(self) -> None:
            state.update(minutes=self._minutes(), next_snapshot=self.next_snapshot, next_eval=self.next_eval,
                         next_ckpt=self.next_ckpt)
            if self.bar is not None:
                self.bar.close()

    return LeagueCallback()

