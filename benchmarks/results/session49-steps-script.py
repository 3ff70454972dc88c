import sys, numpy as np
import os; sys.path.insert(0, os.environ["PYTHONPATH"] + "/benchmarks")
from bench_markets_grid import family
from markets.equilibrium import equilibrium
for fam in ("logit","dups","dirichlet"):
    for (A,K) in ((10,12),(100,12),(10,4),(100,4),(100,10),(1000,12)):
        lp=family(fam, 2000, A, K)
        W=np.random.default_rng(1).uniform(0.2,1,A)
        out=[]
        for eta in (1.5,3.0,10.0,30.0):
            r=equilibrium(lp, eta, W, method="newton", floor=1e-9, check=False)
            out.append(f"{r.n_iter.mean():.2f}")
        print(fam, A, K, " ".join(out), flush=True)
