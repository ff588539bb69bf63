"""A scenario's suppliers as arrays: where an order's goods come from, how long they take and
how often they come late (market.scenario.Supplier). Their unit costs are the operation
rules' (market.operations.OperationRules.supply_cost)."""

from __future__ import annotations

import numpy as np

from market.scenario import Scenario


class Supply:
    """[product, k]: supplier k's lead time, reliability and lateness (k = 0 the usual one,
    always on time); `lead` [product]: the usual supplier's lead time."""

    def __init__(self, scenario: Scenario):
        products = scenario.products
        self.lead = np.array([p.lead_time for p in products])
        listed = 1 + max(len(p.suppliers) for p in products)
        self.names = scenario.supplier_names
        self.lead_time = np.tile(self.lead[:, None], (1, listed))  # whole days
        self.reliability = np.ones((len(products), listed))
        self.late_days = np.zeros((len(products), listed), dtype=np.int64)
        for j, product in enumerate(products):
            for k, supplier in enumerate(product.suppliers, 1):
                self.lead_time[j, k] = supplier.lead_time
                self.reliability[j, k] = supplier.reliability
                self.late_days[j, k] = supplier.late_days if supplier.reliability < 1 else 0
        self.unreliable = bool((self.reliability < 1).any())
        self.horizon = max(int((self.lead_time + self.late_days).max()), 1)  # days an order may take
