"""Autograde step: no file a learner handed in beside the notebook stays in ``autograded/``."""
from nbgrader.preprocessors import NbGraderPreprocessor

from ..course import GRADER_FILES, NBGRADER_FILES


class RemoveHandedInFiles(NbGraderPreprocessor):
    """Keep no file a learner handed in beside the notebook in ``autograded/``: the formgrader
    serves that folder from the Jupyter server's own origin, where an HTML file would run with the
    instructor's session. (The kernel had them: ``GuardedExecute`` copies them into its sandbox.)"""

    # The grader's notes, and nbgrader's own files (release_feedback reads the submission's secret).
    keep = (*GRADER_FILES, *NBGRADER_FILES)

    def preprocess(self, nb, resources):
        import os
        import shutil

        folder = (resources.get("metadata") or {}).get("path")
        if folder and os.environ.get("NBGRADER_EXECUTION") == "autograde" and os.path.isdir(folder):
            for name in os.listdir(folder):
                path = os.path.join(folder, name)
                if name.endswith(".ipynb") or name in self.keep:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        return nb, resources
