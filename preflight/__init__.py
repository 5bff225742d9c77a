"""Glue shared by the stack, the simulation and the policies: input errors and typed field readers."""
