"""`weightfile bench`: the board-side performance run (issue 6, part 3).

synthetic: models of real geometry; machine: what ran it and its memory bandwidth; measure: one
function per reported number; report: the table and the JSON schema.
"""
