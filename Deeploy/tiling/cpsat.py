"""The part of OR-Tools' CP-SAT API the tiler uses, without ``ortools.sat.python.cp_model``:
that module imports pandas (about 0.5 s and 50 MiB), which the tiler never needs. ``CpModel``
builds the same model proto as ``cp_model.CpModel`` does for these calls, on the same C++ base
(``cp_model_helper.CpBaseModel``); OR-Tools releases without that base use ``cp_model`` itself."""

from __future__ import annotations

from ortools.sat.python import cp_model_helper as cmh

__all__ = ["CpModel", "solve", "weighted_sum", "OPTIMAL", "FEASIBLE", "INFEASIBLE", "CHOOSE_FIRST",
           "SELECT_MAX_VALUE", "FIXED_SEARCH"]


class Response:
    """A solve's status and the values of expressions in its solution."""

    def __init__(self, status, value) -> None:
        self.status, self.value = status, value

    def status_name(self) -> str:
        return self.status.name if hasattr(self.status, "name") else str(self.status)


if hasattr(cmh, "CpBaseModel"):
    OPTIMAL, FEASIBLE, INFEASIBLE = (cmh.CpSolverStatus.OPTIMAL, cmh.CpSolverStatus.FEASIBLE,
                                     cmh.CpSolverStatus.INFEASIBLE)
    CHOOSE_FIRST = cmh.DecisionStrategyProto.VariableSelectionStrategy.CHOOSE_FIRST
    SELECT_MAX_VALUE = cmh.DecisionStrategyProto.DomainReductionStrategy.SELECT_MAX_VALUE
    FIXED_SEARCH = cmh.SatParameters.SearchBranching.FIXED_SEARCH
    weighted_sum = cmh.LinearExpr.weighted_sum
    from ortools.util.python.sorted_interval_list import Domain

    class CpModel(cmh.CpBaseModel):
        """``cp_model.CpModel``'s variables, linear constraints, exactly-one, integer objective
        and decision strategies, as that class writes them into the proto."""

        def __init__(self) -> None:
            super().__init__(None)

        def new_int_var(self, lb: int, ub: int, name: str):
            return cmh.IntVar(self.model_proto).with_name(name).with_domain(Domain(lb, ub))

        def new_bool_var(self, name: str):
            return self.new_int_var(0, 1, name)

        def add(self, ct) -> None:
            self._add_bounded_linear_expression(ct)

        def add_exactly_one(self, literals) -> None:
            self._add_bool_argument_constraint(cmh.BoolArgumentConstraint.exactly_one, literals)

        def minimize(self, expr) -> None:
            objective = cmh.FlatIntExpr(expr)
            proto = self.model_proto
            proto.clear_objective()
            proto.clear_floating_point_objective()
            proto.objective.vars.extend(v.index for v in objective.vars)
            proto.objective.scaling_factor = 1.0
            proto.objective.offset = objective.offset
            proto.objective.coeffs.extend(objective.coeffs)

        def add_decision_strategy(self, variables, var_strategy, domain_strategy) -> None:
            strategy = self.model_proto.search_strategy.add()
            for v in variables:
                expr = strategy.exprs.add()
                expr.vars.append(v.index)
                expr.coeffs.append(1)
            strategy.variable_selection_strategy = var_strategy
            strategy.domain_reduction_strategy = domain_strategy

        @property
        def proto(self):
            return self.model_proto

    def solve(model: CpModel, parameters: dict) -> Response:
        """Solves ``model`` with the given SatParameters fields."""
        params = cmh.SatParameters()
        for field, value in parameters.items():
            setattr(params, field, value)
        wrapper = cmh.SolveWrapper()
        wrapper.set_parameters(params)
        response = wrapper.solve(model.proto)
        return Response(response.status, lambda expr: cmh.ResponseHelper.value(response, expr))
else:   # pragma: no cover - OR-Tools before the C++ model base: cp_model itself
    from ortools.sat.python.cp_model import (CHOOSE_FIRST, FEASIBLE, FIXED_SEARCH, INFEASIBLE,  # noqa: F401
                                             OPTIMAL, SELECT_MAX_VALUE, CpModel, CpSolver, LinearExpr)
    weighted_sum = LinearExpr.WeightedSum

    def solve(model: CpModel, parameters: dict) -> Response:
        """Solves ``model`` with the given SatParameters fields."""
        solver = CpSolver()
        for field, value in parameters.items():
            setattr(solver.parameters, field, value)
        return Response(solver.Solve(model), solver.Value)
