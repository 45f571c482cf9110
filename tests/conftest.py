import os
import sys
import tempfile

from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))
# searches cached on disk go to a directory of this test session (also for CLI subprocesses)
os.environ["FASTSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="fastsim-test-cache-")

settings.register_profile("ci", deadline=None, max_examples=200, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("slow", deadline=None, max_examples=2000,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
