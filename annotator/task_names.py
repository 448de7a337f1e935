"""Every background task's name, one scheme: ``annotator.<area>.<verb>``.

Services queue work by name through :func:`annotator.dispatch.enqueue` and never import a task, so
the name is the contract between them, the beat schedule (settings) and the task modules
(``annotator/tasks/<area>.py``); this module is its one home. It imports nothing, so settings can
name the beat tasks with it.

:data:`ALIASES` keeps the names tasks had before the scheme registered as well (a message queued
by an older release, or an :class:`~annotator.models.UndeliveredTask` recorded under it, still
finds its task); drop an alias once no queue can hold it.
"""

from __future__ import annotations

ADJUDICATION_GOLD_MERGE = "annotator.adjudication.gold_merge"
ADJUDICATION_GOLD_MERGE_SWEEP = "annotator.adjudication.gold_merge_sweep"
BROKER_REDISPATCH = "annotator.broker.redispatch"
EXPORTS_BUILD = "annotator.exports.build"
EXPORTS_RELEASE_CHUNK = "annotator.exports.release_chunk"
PROJECTS_CORPUS_IMPORT = "annotator.projects.corpus_import"
PROJECTS_FIGURE_REFRESH = "annotator.projects.figure_refresh"
REPORTS_AGREEMENT = "annotator.reports.agreement_compute"
REPORTS_CIRCULARITY = "annotator.reports.circularity_compute"
REPORTS_EVALUATION = "annotator.reports.evaluation_compute"
RUNS_CHUNK_PROCESS = "annotator.runs.chunk_process"
TAGGER_RETRAIN = "annotator.tagger.retrain"
TAGGER_RETRAIN_CHECK = "annotator.tagger.retrain_check"
TAGGER_TRAIN = "annotator.tagger.train"
WEBHOOKS_DELIVER = "annotator.webhooks.deliver"
WEBHOOKS_FIRE = "annotator.webhooks.fire"
WORKSPACE_PLAN_BUILD = "annotator.workspace.plan_build"

# The fan-outs: one task per chunk of a run or a release, a thousand at a million messages. They
# are sent at the lowest priority (annotator.dispatch), so everything else queued meanwhile runs first.
BATCH = frozenset({RUNS_CHUNK_PROCESS, EXPORTS_RELEASE_CHUNK})

# The long jobs: minutes to hours (a tagger's training, a run's or a release's chunks, a release's
# build, a corpus import). Without a broker they take the in-process long lane, one at a time, and
# everything else (reports, plans, figures, merges, webhooks) the short lane beside it, so a
# report never waits behind a training (annotator.dispatch).
LONG = frozenset({TAGGER_TRAIN, TAGGER_RETRAIN, RUNS_CHUNK_PROCESS, EXPORTS_BUILD, EXPORTS_RELEASE_CHUNK,
                  PROJECTS_CORPUS_IMPORT})

# old name -> the name it is registered under now
ALIASES = {
    "annotator.export_build": EXPORTS_BUILD,
    "annotator.evaluation_job": REPORTS_EVALUATION,
    "annotator.plan_build": WORKSPACE_PLAN_BUILD,
    "annotator.redispatch_undelivered": BROKER_REDISPATCH,
    "annotator.run_chunk": RUNS_CHUNK_PROCESS,
    "annotator.tasks.corpus_import_job": PROJECTS_CORPUS_IMPORT,
    "annotator.tasks.tagger_retrain_job": TAGGER_RETRAIN,
    "annotator.tasks.tagger_train_job": TAGGER_TRAIN,
    "annotator.tasks_agreement.agreement_job": REPORTS_AGREEMENT,
    "annotator.tasks_agreement.circularity_job": REPORTS_CIRCULARITY,
    "annotator.tasks_agreement.gold_merge_job": ADJUDICATION_GOLD_MERGE,
    "annotator.tasks_agreement.gold_merge_sweep_job": ADJUDICATION_GOLD_MERGE_SWEEP,
}
