"""The PULP cluster core (CV32E40P/RI5CY class): ISA encodings, RTL reference, per-instruction costs."""
