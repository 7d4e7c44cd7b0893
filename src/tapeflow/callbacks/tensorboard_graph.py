"""The traced train step as TensorBoard's GraphDef: one node per equation, named and typed by
its op (tapeflow's traced ops carry TensorFlow's op names: MatMul, BiasAdd, Relu, ...), so
TensorBoard's Graphs tab draws the step as it draws a TensorFlow one."""

__all__ = ["traced_graph_def", "graph_def_of"]


def traced_graph_def(step_function):
    """The GraphDef of a tf.function's first traced graph; None for an eager step (nothing was
    traced, so there is no graph to draw: Keras writes none for an eager model either)."""
    for traced in getattr(step_function, "_cache", {}).values():
        concrete = getattr(traced, "first", traced)  # a relaxed signature keeps its first trace
        graph = getattr(concrete, "graph", None)
        if graph is not None:
            return graph_def_of(graph)
    return None


def graph_def_of(graph):
    from tensorboard.compat.proto import graph_pb2, node_def_pb2

    names = {}  # value id -> the "node:output" that makes it
    nodes = []

    def add(name, op, inputs=()):
        nodes.append(node_def_pb2.NodeDef(name=name, op=op, input=list(inputs)))

    for i, vid in enumerate(graph.inputs):
        names[vid] = f"input_{i}"
        add(names[vid], "Placeholder")
    for i, vid in enumerate(graph.consts):
        names[vid] = f"Const_{i}"
        add(names[vid], "Const")
    for i, eqn in enumerate(graph.eqns):
        node = f"{eqn.op.name}_{i}"
        variable = eqn.attrs.get("variable")
        if isinstance(variable, int) and variable < len(graph.variables):
            node = f"{graph.variables[variable].path.replace(':', '_')}/{node}"
        add(node, eqn.op.name, [names[v] for v in eqn.inputs if v in names])
        for k, out in enumerate(eqn.outputs):
            names[out] = node if k == 0 else f"{node}:{k}"
    return graph_pb2.GraphDef(node=nodes)
