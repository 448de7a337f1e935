"""The training loop: epochs of AdamW over length-bucketed, dynamically padded windows, early-stopped
on dev F-beta (once an epoch, or every ``eval_every`` steps), with the optimisation time budgeted by
``max_seconds`` and the steps by ``max_steps``."""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from pipeline.tagger.encoding import WindowEncoder
from pipeline.tagger.model import TaggerModel, collate, length_batches
from pipeline.tagger.training.config import Progress, TrainConfig
from pipeline.tagger.training.distillation import Distiller
from pipeline.tagger.training.tuning import evaluate_model
from pipeline.types import Dialogue


@contextmanager
def reproducible(torch: Any, seed: int) -> Iterator[None]:
    """Seed every generator training draws from and ask torch for deterministic kernels, so one
    recipe gives one model on one machine (the thread count is part of the machine: it orders the
    sums). torch raises rather than run an op that has no deterministic kernel; the process's
    previous setting is restored after, so inference elsewhere keeps torch's defaults."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


class TrainingLoop:
    """Epochs of AdamW over shuffled length-bucketed windows, early-stopped on dev F-beta;
    the best scoring's weights are loaded back at the end. A warm-started run (``score_first``)
    scores its starting weights first, so it never ends worse on dev than where it started."""

    def __init__(
        self, torch: Any, tagger: TaggerModel, encoder: WindowEncoder, train: list[Dialogue],
        dev: list[Dialogue], config: TrainConfig, report: Progress, distiller: Distiller | None = None,
        score_first: bool = False,
    ) -> None:
        self.torch, self.tagger, self.model = torch, tagger, tagger.model
        self.distiller = distiller
        self.encoder, self.train, self.dev = encoder, train, dev
        self.epochs, self.batch_size, self.seed = config.epochs, config.batch_size, config.seed
        self.f_beta, self.patience, self.report = config.f_beta, config.patience, report
        self.max_seconds, self.max_steps = config.max_seconds, config.max_steps
        self.eval_every = config.eval_every
        self.score_first, self.empty_share = score_first, config.empty_window_share
        self.step_seconds = 0.0  # optimisation time only: what max_seconds budgets
        self.diverged_at: int | None = None
        self.params, self.optimizer = self._optimizer(config.lr, config.freeze_embeddings)
        self.first = self.epoch_batches(0)
        self.total = len(self.first) * config.epochs
        if self.max_steps is not None:
            self.total = min(self.total, self.max_steps)
        warmup = self.warmup = max(1, int(0.06 * self.total))
        total = self.total
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup))),
        )
        self.class_weight = torch.ones(tagger.label_map.num_tags)
        self.class_weight[0] = config.outside_weight  # rarer PII tags weigh more: recall first
        self.best_f, self.best_state, self.best_epoch, self.bad, self.done = -1.0, None, 0, 0, 0
        self.best_step, self.scored_at = 0, -1
        self.history: list[dict] = []
        self.stopped = "epochs"

    def _optimizer(self, lr: float, freeze_embeddings: bool) -> tuple[list, Any]:
        model = self.model
        if freeze_embeddings:
            model.get_input_embeddings().weight.requires_grad_(False)
        head_names = {"classifier.weight", "classifier.bias"}
        body = [p for n, p in model.named_parameters() if p.requires_grad and n not in head_names]
        head = [p for n, p in model.named_parameters() if p.requires_grad and n in head_names]
        optimizer = self.torch.optim.AdamW(
            [{"params": body, "lr": lr}, {"params": head, "lr": lr * 10}], weight_decay=0.01
        )
        return body + head, optimizer

    def epoch_batches(self, epoch: int) -> list[list]:
        rng = random.Random(self.seed * 1000 + epoch)
        windows = [
            w
            for d in self.train
            for w in self.encoder.encode(d, with_labels=True, rng=rng)
            if w.positions
        ]
        if self.empty_share < 1:  # windows with no PII word: only a share of them
            windows = [w for w in windows if any(t > 0 for t in w.labels) or rng.random() < self.empty_share]
        batches = [[windows[i] for i in b] for b in length_batches(windows, self.batch_size)]
        rng.shuffle(batches)
        return batches

    def run(self) -> None:
        if self.score_first and self.dev:  # the starting weights are the first candidate
            self.history.append(self._score(0, {"epoch": 0, "step": 0}))
        for epoch in range(self.epochs):
            losses = self._train_epoch(epoch)
            if self.stopped == "diverged":  # nan weights: nothing to score; the best epoch is kept
                self.history.append({"epoch": epoch + 1, "loss": None})
                break
            loss = round(float(np.mean(losses)), 5) if losses else None
            entry: dict[str, Any] = {"epoch": epoch + 1, "step": self.done, "loss": loss}
            if self.scored_at != self.done:
                self._score(epoch + 1, entry)
            self.history.append(entry)
            if self.stopped in ("time limit", "step budget", "early stopping"):
                break
            if self.dev and self.bad >= self.patience and epoch + 1 < self.epochs:
                self.stopped = "early stopping"
                break
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        self.model.eval()

    def _train_epoch(self, epoch: int) -> list[float]:
        torch, model = self.torch, self.model
        batches = self.first if epoch == 0 else self.epoch_batches(epoch)
        model.train()
        losses: list[float] = []
        for batch_windows in batches:
            if self.max_steps is not None and self.done >= self.max_steps:
                self.stopped = "step budget"
                break
            t0 = time.perf_counter()
            batch = collate(torch, batch_windows, self.tagger.pad_id, with_labels=True)
            if not self.tagger.use_token_types:
                batch.pop("token_type_ids")
            targets = batch.pop("labels")
            hidden = self.distiller is not None and self.distiller.wants_hidden_states
            out = model(**batch, output_hidden_states=hidden)
            logits = out.logits
            loss = torch.nn.functional.cross_entropy(
                logits.view(-1, logits.shape[-1]), targets.view(-1), weight=self.class_weight
            )
            if self.distiller is not None:
                loss = self.distiller.loss(torch, batch, logits, targets, loss,
                                           out.hidden_states if hidden else None)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.params, 1.0)
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step_seconds += time.perf_counter() - t0
            losses.append(float(loss.detach()))
            self.done += 1
            if not math.isfinite(losses[-1]):
                self.stopped, self.diverged_at = "diverged", self.done
                break
            self.report(
                self.done, self.total,
                f"epoch {epoch + 1}/{self.epochs}, loss {np.mean(losses[-50:]):.4f}",
            )
            if self.max_seconds and self.step_seconds >= self.max_seconds:
                self.stopped = "time limit"
                break
            if self.eval_every and self.done % self.eval_every == 0 and self._stops_early(epoch):
                break
        return losses

    def _stops_early(self, epoch: int) -> bool:
        """Score dev mid-epoch (``eval_every``); True when ``patience`` scorings in a row did not
        improve on the best (``stopped`` is then ``"early stopping"``)."""
        if not self.dev:
            return False
        self.history.append(self._score(epoch + 1, {"epoch": epoch + 1, "step": self.done}))
        self.model.train()
        if self.bad >= self.patience:
            self.stopped = "early stopping"
            return True
        return False

    def facts(self, dev_metrics: dict[str, Any], f_beta: float, min_dev_score: float) -> dict[str, Any]:
        """What ``tagger.json`` records under ``training``, for ``store.activation_blockers``."""
        key = f"f{f_beta:g}"
        score = (dev_metrics.get("recall_first") or {}).get(key)
        return {
            "steps": self.done, "planned_steps": self.total, "warmup_steps": self.warmup,
            "stopped": self.stopped, "max_seconds": self.max_seconds, "max_steps": self.max_steps,
            "best_step": self.best_step,
            "step_seconds": round(self.step_seconds, 2), "diverged_at_step": self.diverged_at,
            "dev_metric": key, "dev_score": score, "min_dev_score": min_dev_score,
        }

    def _score(self, epoch: int, entry: dict[str, Any]) -> dict[str, Any]:
        """Score dev into ``entry`` and keep the weights when they are the best so far."""
        self.scored_at = self.done
        if not self.dev:
            self.best_epoch, self.best_step = epoch, self.done
            return entry
        self.report(self.done, self.total, f"step {self.done}: scoring dev")
        scores, _ = evaluate_model(self.tagger, self.dev, beta=self.f_beta)
        f = scores[f"f{self.f_beta:g}"]
        entry["dev"] = {k: scores[k] for k in ("precision", "recall", "f1", f"f{self.f_beta:g}")}
        if f > self.best_f:
            self.best_f, self.best_epoch, self.best_step, self.bad = f, epoch, self.done, 0
            self.best_state = copy.deepcopy(self.model.state_dict())
        else:
            self.bad += 1
        return entry
