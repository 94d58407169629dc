"""nbgrader's exchange (the Assignments tab's fetch and submit), made private between learners.

nbgrader's own ``submit`` leaves each submission in the shared inbound folder as a folder anyone
may write and files anyone may read, hidden only behind a name nobody can list (upstream issue
1225), and its ``collect`` believes the learner's name written in that folder's name, only
warning when another account wrote it. Set in the course's and the learners' configuration::

    c.ExchangeFactory.submit = "attention_course.exchange.PrivateSubmit"     # learners
    c.ExchangeFactory.collect = "attention_course.exchange.OwnedCollect"     # the instructor
"""
import os
import pwd

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.submit import ExchangeSubmit

# Folders: the learner reads and writes; the inbound folder's group (the instructor's: the
# folder is set-group-ID) reads; nobody else. Files likewise.
FOLDER_MODE, FILE_MODE = 0o2750, 0o640


class PrivateSubmit(ExchangeSubmit):
    """``nbgrader submit`` whose copy in the inbound folder only its learner and the instructor's
    group can read: another learner can neither list, read, change nor remove it."""

    def copy_files(self):
        super().copy_files()
        submission = os.path.join(self.inbound_path, self.assignment_filename)
        for folder, _, files in os.walk(submission):
            for name in files:
                os.chmod(os.path.join(folder, name), FILE_MODE)
        for folder, _, _ in sorted(os.walk(submission), key=lambda entry: -len(entry[0])):
            os.chmod(folder, FOLDER_MODE)


def owner_of(path):
    uid = os.stat(path).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


class OwnedCollect(ExchangeCollect):
    """``nbgrader collect`` that credits a submission to the account that wrote it: one written
    into the inbound folder under another learner's name counts as its writer's (with a
    warning), so nobody can submit in someone else's name. Folders written by the instructor
    (root, or the account collecting) keep the name they carry."""

    def _path_to_record(self, path):
        record = super()._path_to_record(path)
        owner = owner_of(path)
        trusted = os.stat(path).st_uid in (0, os.getuid())
        if owner != record["username"] and not trusted:
            self.log.warning("%s is named for %s but was written by %s: it counts as %s's submission",
                             record["filename"], record["username"], owner, owner)
            record["username"] = owner
        return record
