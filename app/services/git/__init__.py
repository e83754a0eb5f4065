"""The git layer under per-session worktrees: pure functions over the ``git`` command.

No database and no web here: callers pass paths, branch names and commits, and get
dataclasses back or an :class:`~app.services.git.repo.GitError` (an ``AppError`` whose
``status`` the web layer answers with). Every function blocks on a git process; call
them from a worker thread.

- ``command``: running git, on the git dir and work tree the app recorded, with nothing
  the repository says able to start a program.
- ``repo``: finding the repository, its branch and HEAD; checking that a worktree still
  points where git made it.
- ``worktrees``: making and removing a session's worktree.
- ``changes``: what changed since a commit or a snapshot, as git sees the files
  (``scratch`` keeps the private index copies it reads them through).
- ``merge``: committing in a worktree, merging its branch into its base.
- ``overwrite``: the ignored or untracked files a merge would write over in a checkout.
- ``inventory``: every worktree under the app's folder, its state and size.
"""
