"""Transcriptions of the field's official reply readers and scorers, for the fidelity tests.

One module per source of official code (a repository and the functions read there). Each
function is a faithful transcription of the authors' function, quirks included, with its
repository, commit, path and line numbers in the docstring. Nothing here imports spatialprobe: these
modules are the independent side of the comparison. See README.md beside this file for what each
reader does differently from a strict "exact letter or exact option text" reader.
"""
