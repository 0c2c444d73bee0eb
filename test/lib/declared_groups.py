"""Declarations of the declared groups that several tests compile.

SL(2, ℝ) (closed-form 2×2 log, scaled E generator) and the planar
similarities Sim(2) (rotation and scaling in one norm block, translations
in the other), as the gradient tests (test/Autodiff/declared-attention-
gradients*.py) and the numerics test lie-attention-sl2-sim2.py write them.
"""

SL2 = """group SL2 {
  matrix 2;
  generator H = [[1, 0], [0, -1]];
  generator E = [[0, 2], [0, 0]];
  generator F = [[0, 0], [1, 0]];
  norm diag = H;
  norm off = E, F;
}"""

SIM2 = """group Sim2 {
  matrix 3;
  generator R = [[0, -1, 0], [1, 0, 0], [0, 0, 0]];
  generator S = [[1, 0, 0], [0, 1, 0], [0, 0, 0]];
  generator Tx = [[0, 0, 1], [0, 0, 0], [0, 0, 0]];
  generator Ty = [[0, 0, 0], [0, 0, 1], [0, 0, 0]];
  norm rotscale = R, S;
  norm trans = Tx, Ty;
}"""
