"""``cluster.connect.worker_addresses`` on a real ``LocalCluster``: a moment without workers (a nanny
replacing one that died) is waited for; a cluster that stays without any is a clear error in time."""

import threading
import time

import pytest

from cluster.connect import worker_addresses
from solvers.errors import InputError

distributed = pytest.importorskip("distributed")


def test_a_cluster_without_workers_is_waited_for_then_a_clear_error():
    with (
        distributed.LocalCluster(n_workers=0, processes=True, threads_per_worker=1, dashboard_address=None) as lc,
        distributed.Client(lc) as c,
    ):
        start = time.monotonic()
        with pytest.raises(InputError) as e:
            worker_addresses(c, timeout=1.0)
        assert e.value.field == "client" and "no workers" in e.value.reason and "1 s" in e.value.reason
        assert time.monotonic() - start < 20
        threading.Timer(0.5, lambda: lc.scale(1)).start()  # a worker arrives while the call waits
        (address,) = worker_addresses(c, timeout=60.0)
        assert address in c.scheduler_info(n_workers=-1)["workers"]
