"""The competition's evaluation of pools (seed 000, section 2.7.3): library code, no HTTP.

* :mod:`evaluation.split` - the public/private split of the test items and the private subsets;
* :mod:`evaluation.table` - the statistics of Table 2.3 (mean ± std, paired t-test);
* :mod:`evaluation.leaderboard` - public and private rankings of submissions;
* :mod:`evaluation.aggregation` - fitting every pool (and the market) on the submissions: Table 2.3,
  the Rényi sweep (Fig. 2.5a) and the credit of each submission;
* :mod:`evaluation.market` - the isoelastic market as one more aggregate;
* :mod:`evaluation.metrics` - the quality summary of an aggregate on labelled items;
* :mod:`evaluation.demo_task` - Algorithm 2.3's pixel task and its field of agents (the demo data);
* :mod:`evaluation.submission_map` - which submissions are alike: a graphical lasso over their
  log-loss residuals, its partial-correlation edges and families (beyond the seeds);
* :mod:`evaluation.grouping` - one agent per family before fitting, and a competition with planted
  families.

It sits above :mod:`aggregators` and :mod:`markets` (and :mod:`solvers`) and never imports :mod:`app`;
the service stores competitions and calls these functions.
"""
