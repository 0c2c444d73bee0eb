"""test_version.py - one version number: torsor.__version__ (the source,
python/torsor/_version.py), torsorc --version, torsor-run --version and
the installed package's metadata agree."""
import os
import subprocess
import unittest

import common
from common import torsor


class Version(unittest.TestCase):
    def test_one_version_everywhere(self):
        v = torsor.__version__
        self.assertRegex(v, r"^\d+\.\d+\.\d+$")
        for tool in ("torsorc", "torsor-run"):
            out = subprocess.run([os.path.join(common.BUILD, "bin", tool), "--version"],
                                 capture_output=True, text=True, check=True).stdout
            self.assertIn("Torsor version %s\n" % v, out, tool)
        if not os.environ.get("TORSOR_TEST_IN_PLACE"):
            from importlib import metadata
            self.assertEqual(metadata.version("torsor"), v)


if __name__ == "__main__":
    unittest.main()
