"""Task-parallel runtimes on NUMA machines (docs/taskgraph.md): task graphs of objects with
loads, state sizes and messages, PEs on the machine's cores, load balancers every k
iterations, migration costs. The simulator is the Rust core's (``_core.taskgraph_simulate``);
this package names the graphs (``graphs``), adds the partitioning balancers (``partition``,
``balancers``), makes result documents (``run``), study files (``study``) and report figures
(``figures``).
"""

from numalab.tasks.balancers import BalancerSpec, parse_list
from numalab.tasks.graphs import GraphSpec, graph_spec
from numalab.tasks.run import Settings, migration_cost, simulate

__all__ = ["BalancerSpec", "GraphSpec", "Settings", "graph_spec", "migration_cost", "parse_list", "simulate"]
