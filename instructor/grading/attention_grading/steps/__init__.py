"""The course's nbgrader steps, one preprocessor to a module as nbgrader's own ``preprocessors/``.
``nbgrader_config.py`` lists them; plain ``nbgrader autograde`` runs them through nbgrader, and
``make grade``'s jobs apply the same lists to each notebook (``run.autograde``), the gradebook
steps left to the store (``store.grades``).

Sanitize (``Autograde.sanitize_preprocessors``): ``well_formed_text`` (any text is graded),
``restore`` (``DropUnreadableMetadata``, ``RestoreKernelspec``, ``RestoreCells``: a graded cell is
what the gradebook says it is).

Autograde (``Autograde.autograde_preprocessors``): ``execute`` (``GuardedExecute``: sandboxed
kernels, hidden tests driven by the grader, a verdict for every graded cell), ``sanitize``
(``SanitizeLearnerHTML``), ``remove_handed_in_files``, ``verdicts`` (``ApplyVerdicts`` shows each
verdict as the cell's only scoring output, ``SaveVerdicts`` scores it).

Feedback (``GenerateFeedback.preprocessors``, the learner's page, never the hidden tests):
``label_cells`` (each check's name, written answers awaiting grading), ``hide_hidden_tests``
(hidden blocks replaced by a note, errors reduced to their message, instructor paths scrubbed),
``sanitize``, ``figure_outputs`` (the learner's own figures as pictures, up to a size), and the page
itself, ``feedback_exporter`` (the course's template, formulas as MathML with ``maths``, a
Content-Security-Policy from ``csp``).
"""
