"""nbgrader's exchange (the Assignments tab's fetch and submit), made private between learners.

nbgrader's own ``submit`` leaves each submission in the shared inbound folder as a folder anyone
may write and files anyone may read, hidden only behind a name nobody can list (upstream issue
1225), and its ``collect`` believes the learner's name written in that folder's name, only
warning when another account wrote it; it follows every symbolic link in the folder (copying
whatever it points at into ``submitted/``) and takes the submission's time from the folder's
name and its ``timestamp.txt``, both written by the learner, who can also change the files until
they are collected. Set in the course's and the learners' configuration::

    c.ExchangeFactory.submit = "attention_course.exchange.PrivateSubmit"     # learners
    c.ExchangeFactory.collect = "attention_course.exchange.OwnedCollect"     # the instructor
"""
import datetime
import fnmatch
import os
import pwd
import stat

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.submit import ExchangeSubmit

from traitlets import Integer

from .regular_files import recorded_time, survey, walk

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
    """The account that owns ``path`` itself (a link is not followed)."""
    uid = os.lstat(path).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


class OwnedCollect(ExchangeCollect):
    """``nbgrader collect`` that takes from the inbound folder only what its learner submitted:

    - a submission counts as the account's that wrote it: one written into the inbound folder
      under another learner's name counts as its writer's (with a warning), so nobody can submit
      in someone else's name; folders written by the instructor (root, or the account collecting)
      keep the name they carry;
    - only regular files of the submission are copied (``regular_files.walk``): no symbolic or
      hard link, named pipe, device or socket is followed or copied (each is named in a warning);
      a submission folder that is itself a link is not collected;
    - its time is when it last changed, as the kernel recorded it (``regular_files.recorded_time``,
      written to ``submitted/.../timestamp.txt``), never the time its folder's name or its
      ``timestamp.txt`` claim: a learner who changes a submission after submitting makes it a
      later submission (late, if after the deadline), which ``collect --update`` takes as new;
    - its size and number of files are checked with ``lstat`` before anything is read
      (``CourseDirectory.max_dir_size``, ``max_files``): a submission over either is named with
      the reason and not collected, and collection goes on with everyone after it."""

    max_files = Integer(1000, help="Entries (files, folders, anything) one submission may hold; a submission "
                        "with more is not collected (named, with the reason).").tag(config=True)

    def _refusal(self, path):
        """Why the submission folder ``path`` is too large to collect, from ``lstat`` alone, or None."""
        limit = 1000 * self.coursedir.max_dir_size
        entries, size = survey(path, self.max_files)
        if entries > self.max_files:
            return f"it holds more than {self.max_files:,} files and folders (OwnedCollect.max_files)"
        if size > limit:
            return (f"its files take {size:,} bytes, more than {limit:,} (CourseDirectory.max_dir_size; "
                    "a sparse file counts whole)")
        return None

    def _path_to_record(self, path):
        try:
            record = super()._path_to_record(path)
        except Exception as exc:         # a name nbgrader cannot read: that folder's problem alone
            name = os.path.basename(path)
            self.log.warning("%s is not a submission's name (%s): not collected", name, exc)
            return {"username": f"unreadable {name}", "filename": name, "timestamp": datetime.datetime.min,
                    "refused": "its name"}
        if stat.S_ISLNK(os.lstat(path).st_mode):
            self.log.warning("%s is a symbolic link, not a submission: not collected", record["filename"])
            return {**record, "refused": "a symbolic link", "timestamp": datetime.datetime.min}
        too_big = self._refusal(path)
        if too_big:
            self.log.warning("%s is not collected: %s", record["filename"], too_big)
            return {**record, "refused": too_big, "timestamp": datetime.datetime.min}
        owner = owner_of(path)
        trusted = os.lstat(path).st_uid in (0, os.getuid())
        if owner != record["username"] and not trusted:
            self.log.warning("%s is named for %s but was written by %s: it counts as %s's submission",
                             record["filename"], record["username"], owner, owner)
            record["username"] = owner
        try:
            changed = recorded_time(path)
        except OSError as exc:
            self.log.warning("%s cannot be read (%s): not collected", record["filename"], exc.strerror or exc)
            return {**record, "refused": "unreadable", "timestamp": datetime.datetime.min}
        if changed > record["timestamp"] + datetime.timedelta(seconds=1):
            self.log.info("%s changed after it was submitted (at %s UTC): that is its time",
                          record["filename"], changed.strftime(TIMESTAMP_FORMAT))
        return {**record, "timestamp": changed}

    def init_src(self):
        super().init_src()
        self.src_records = [record for record in self.src_records if "refused" not in record]

    def do_copy(self, src, dest, log=None):
        """Copy the regular files of ``src`` to ``dest`` (nbgrader's ignore, include and size
        settings applied), then its recorded time as ``timestamp.txt``."""
        before = recorded_time(src)
        # Checked again as it is read (``_refusal`` counted it before): a file that grew since
        # is left out, named, rather than read past the limits.
        files, skipped = walk(src, max_files=self.max_files, max_total=1000 * self.coursedir.max_dir_size)
        for path, why in skipped:
            self.log.warning("%s/%s is %s: not collected", os.path.basename(src), path, why)
        os.makedirs(dest, exist_ok=True)
        for path, data in files.items():
            parts = path.split("/")
            if any(fnmatch.fnmatch(part, glob) for part in parts for glob in self.coursedir.ignore or ()):
                continue
            include = self.coursedir.include
            if include and not any(fnmatch.fnmatch(parts[-1], glob) for glob in include):
                continue
            if self.coursedir.max_file_size and len(data) > 1000 * self.coursedir.max_file_size:
                self.log.warning("%s/%s is too large: not collected (CourseDirectory.max_file_size)",
                                 os.path.basename(src), path)
                continue
            target = os.path.join(dest, *parts)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(data)
        changed = max(before, recorded_time(src))      # a change made while copying counts too
        with open(os.path.join(dest, "timestamp.txt"), "w") as fh:
            fh.write(changed.strftime(TIMESTAMP_FORMAT) + " UTC")
        if self.coursedir.groupshared:
            for folder, _, names in os.walk(dest):
                os.chmod(folder, 0o2770)
                for name in names:
                    os.chmod(os.path.join(folder, name), 0o660)
