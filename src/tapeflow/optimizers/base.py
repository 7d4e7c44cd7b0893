"""``Optimizer``: everything the optimizers share, done once.

Keras 3's shape: a subclass writes only ``build(var_list)`` (its slots, made
with ``add_slot``) and ``update_step(gradient, variable, learning_rate)``.
This base skips None gradients, turns gradients into arrays, clips them,
applies decoupled weight decay, evaluates the learning rate (a float or a
schedule of ``iterations``), calls ``update_step`` once per variable, applies
variable constraints and counts the step.

A step is made of ops, so that a ``tf.function`` around a training step traces
it whole: the learning rate is a scalar tensor (a float rate's float32 Variable,
or a schedule evaluated with ops on ``iterations`` in float64), clipping and weight
decay are ops, and each optimizer's per-variable update is one registered primitive
(``ApplyAdam``, ...) whose kernel is the fast array code: a pure function of the
variable, its slots, the gradient, the rate and (where the formula depends on
the step) the ``iterations`` tensor, returning their new values.  Step-dependent
scalars such as Adam's bias correction are computed inside the kernel from the
``iterations`` it is given, with the same float arithmetic as before, so eager
numbers are unchanged and eager steps stay a few array operations per variable.  Its results are stored with ``assign``
inside a trace; eagerly they are installed as they are (``_store``: the kernel
made them, nothing else holds them), which costs nothing more than the in-place
updates did.  No array is ever modified: a tape may still hold a variable's old
array as the value the variable had when the loss read it.  ``iterations`` moves
with ``assign_add``.  A replay at step 100 therefore uses step 100's rate.

State (``variables``, ``get_state``) is named, not numbered, so a checkpoint
can key it by name:

* ``"iteration"``: the step counter (int64);
* ``"learning_rate"``: a float rate's Variable (float32, as Keras 3's).  ``learning_rate``
  is that Variable: ``assign`` it (or set the property) and the next step uses the
  new rate, a traced step too, with no new trace; checkpoints carry it.  A schedule
  has no such variable: its position is ``iterations``;
* optimizer-wide variables by their own name (Nadam's ``"u_product"``);
* ``"<variable key>/<slot>"`` for each slot.  A model's optimizer (one given to
  ``Model.compile``) keys a model variable by the model's structure, with the
  key function of its whole-model saves (``models.weights_io.weight_keys``):
  ``"sequential/dense/kernel/momentum"`` whatever the process-wide layer
  counters named the variable (``sequential_3/dense_7/kernel``), so state moves
  between two models of the same architecture and between processes.  Any other
  variable (a bare ``tf.Variable``, or one the model does not hold) is keyed by
  its *path*, ``Variable.path`` (a ``tf.Variable``'s name without the ``:0``, a layer
  weight's hierarchical name: ``"x/momentum"``, ``"dense/kernel/momentum"``); two such
  variables with the same name (``tf.Variable`` defaults every name to
  ``"Variable"``) get ``_1``, ``_2``, ... added in the order the optimizer first
  saw them.  A key is fixed when the optimizer first sees the variable (compiling
  re-keys the variables it has already seen).

``set_state`` checks the whole state (names, shapes) before it assigns anything,
and a model's optimizer that has not met a variable yet makes its slots from the
state's keys, so loading state needs no training step first.

``minimize(loss, var_list, tape=None)`` is the general entry point: an
optimizer whose step needs the loss itself (Newton's method evaluates it to
take second derivatives) overrides ``minimize``.  ``apply_gradients`` is the
entry point of gradient-only optimizers.
"""
import contextlib
import re
import warnings

import numpy  # host-side state copies only; tensor data goes through backend

from .. import backend
from .. import replication
from ..core.context import PER_THREAD, context
from ..core.dispatch import apply as apply_op
from ..core.registry import def_primitive
from ..core.tape import GradientTape
from ..core.tensor import Tensor, Variable, convert_to_tensor
from ..ops.arithmetic import maximum, multiply
from ..ops.clip import clip_by_value
from ..ops.shape import cast
from . import schedules

__all__ = ["Optimizer"]

# Keras config keys for features tapeflow does not have, with the value that means "off".
_KERAS_ONLY_DEFAULTS = {"use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                        "loss_scale_factor": None, "gradient_accumulation_steps": None}


class Optimizer:
    """Base class of the optimizers.

    Args:
        learning_rate: a float, a ``schedules.LearningRateSchedule`` (called with
            ``iterations``), or a callable of no arguments giving the rate.
        clipnorm: clip each gradient to at most this L2 norm.
        clipvalue: clip each gradient element to [-clipvalue, clipvalue].
        global_clipnorm: scale all gradients together so that their joint L2
            norm is at most this.  At most one of the three clipping options.
        weight_decay: decoupled weight decay (AdamW's): before each update,
            ``var -= learning_rate * weight_decay * var``.
        name: the optimizer's name (default: its class name in lower case).

    A subclass writes ``build(var_list)`` (calling ``super().build`` and then
    ``add_slot`` for each variable; ``add_variable`` for optimizer-wide state) and
    ``update_step``; ``_begin_step(step)`` may compute what all variables of one
    step share.  ``iterations`` still holds the number of finished steps while
    they run.
    """

    def __init__(self, learning_rate=0.001, *, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 weight_decay=None, name=None):
        clipping = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        given = {k: v for k, v in clipping.items() if v is not None}
        if len(given) > 1:
            raise ValueError(f"Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
                             f"Received: {given}")
        for key, value in given.items():
            if not value > 0:
                raise ValueError(f"`{key}` must be a positive number, got {value!r}")
        if weight_decay is not None and weight_decay < 0:
            raise ValueError(f"`weight_decay` must be >= 0, got {weight_decay!r}")
        self.name = type(self).__name__.lower() if name is None else str(name)
        # Python floats: a numpy float64 here would turn float32 variables into float64
        self.clipnorm = None if clipnorm is None else float(clipnorm)
        self.clipvalue = None if clipvalue is None else float(clipvalue)
        self.global_clipnorm = None if global_clipnorm is None else float(global_clipnorm)
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        rate = _checked_learning_rate(learning_rate)
        self._iterations = Variable(0, trainable=False, name="iteration", dtype="int64")
        self._state = {"iteration": self._iterations}  # every optimizer variable by key, in order
        # a float rate's Variable (state "learning_rate"), or a schedule / callable
        self._learning_rate = self._rate_variable(rate) if rate.__class__ is float else rate
        self._keyed_by = None  # () -> [(key, variable), ...]: the structure of the model trained
        self._keys = {}        # id of a model variable -> its key in this optimizer's state
        self._taken_keys = set()
        self._trained = []     # the model variables, in the order the optimizer first saw them
        self._slots = {}       # id of a model variable -> {slot name: slot Variable}
        self._slot_names = []
        self._no_decay_ids = set()
        self._no_decay_pattern = None
        self._decays = {}      # id of a model variable -> whether weight decay applies to it

    # --- what subclasses write ---------------------------------------------------
    def build(self, var_list):
        """Create the state for ``var_list``; subclasses add their slots after calling this.

        Called by the first ``apply_gradients`` that meets a variable, so usually
        not by hand; calling it for a variable that already has its slots is harmless.
        """
        new = [v for v in var_list if v._id not in self._keys]
        structure = self._structure() if new else None
        for variable in new:
            self._key_of(variable, structure)

    def update_step(self, gradient, variable, learning_rate):
        """Update one variable: ``gradient`` is a tensor of the variable's shape and dtype,
        ``learning_rate`` a scalar tensor (a float rate's float32 Variable, or a schedule's
        float64 value).  Compute the new values with ops (the built-in optimizers run one
        primitive with ``self._apply_update``) and store them with ``variable.assign`` (or
        ``self._store``), so that the step can be traced."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_step(gradient, "
                                  "variable, learning_rate), or override minimize.")

    def scale_loss(self, loss):
        """The loss ``Model.train_step`` differentiates: ``loss`` itself here; a
        ``LossScaleOptimizer`` multiplies it by its loss scale (Keras 3's method)."""
        return loss

    def _begin_step(self, iterations):
        """Work shared by all variables of one step, done with ops on ``iterations`` (the
        int64 tensor of finished steps; this step is ``iterations + 1``).  Scalars that only
        depend on the step (Adam's bias correction) are cheapest computed inside the update
        op's kernel from ``iterations``, which is one of its operands."""

    @staticmethod
    def _store(variable, value):
        """``variable.assign(value)`` for a result an update kernel just made: inside a trace
        an assign op; eagerly its array is installed as it is (no copy, no checks)."""
        if context().trace is not None:
            variable.assign(value)
        else:
            variable._replace_value(value._value)

    @staticmethod
    def _apply_update(op, operands, attrs, targets):
        """Run update op ``op`` on ``operands`` and store its outputs into the Variables
        ``targets`` (one per output; None skips one).  Through ``apply`` (so traced, or seen
        by tapes) when anything watches; otherwise the kernel's arrays are installed
        directly, which is all ``apply`` and ``_store`` would do, minus the Tensors."""
        if PER_THREAD.context.active:
            outs = apply_op(op, operands, attrs)
            outs = (outs,) if op.num_outputs == 1 else outs
            for target, out in zip(targets, outs):
                if target is not None:
                    Optimizer._store(target, out)
            return
        values = [t._value for t in operands]
        arrays = op.forward(*values, **attrs) if attrs else op.forward(*values)
        if op.num_outputs == 1:  # SGD's one result: no tuple to build and walk
            if targets[0] is not None:
                targets[0]._value = arrays
            return
        for target, array in zip(targets, arrays):
            if target is not None:
                target._value = array

    # --- state --------------------------------------------------------------------
    def add_slot(self, variable, slot_name, initial_value=0.0):
        """The slot ``slot_name`` of ``variable``: an array of its shape and dtype filled
        with ``initial_value``, named ``"<variable key>/<slot_name>"``; made once."""
        slots = self._slots.get(variable._id)
        if slots is not None and slot_name in slots:
            return slots[slot_name]
        if "/" in slot_name:  # keeps "<variable key>/<slot>" unambiguous
            raise ValueError(f"slot names have no '/', got {slot_name!r}")
        key = self._key_of(variable)
        value = variable._value
        xp = backend.array_module(value)
        slot = Variable(xp.full(value.shape, initial_value, dtype=value.dtype), trainable=False,
                        name=f"{key}/{slot_name}")
        slot._updated_in_place = True  # so its value() and numpy() hand out copies
        self._slots.setdefault(variable._id, {})[slot_name] = slot
        self._state[slot._name] = slot
        if slot_name not in self._slot_names:
            self._slot_names.append(slot_name)
        return slot

    def add_variable(self, name, initial_value, dtype="float32"):
        """An optimizer-wide variable (not tied to one model variable), made once."""
        if "/" in name:
            raise ValueError(f"optimizer-wide variable names have no '/', got {name!r}")
        if name not in self._state:
            self._state[name] = Variable(initial_value, trainable=False, name=name, dtype=dtype)
        return self._state[name]

    def get_slot(self, var, slot_name):
        """The slot Variable ``slot_name`` of ``var``."""
        try:
            return self._slots[var._id][slot_name]
        except KeyError:
            if var._id not in self._keys:
                raise ValueError(f"{type(self).__name__} has no state for variable '{var.name}': "
                                 "it has not been trained by this optimizer yet.") from None
            raise ValueError(f"{type(self).__name__} has no slot {slot_name!r} for variable "
                             f"'{var.name}'; its slots: {sorted(self._slots.get(var._id, ()))}") from None

    def get_slot_names(self):
        """The names of the slots this optimizer has made, in the order it made them."""
        return list(self._slot_names)

    @property
    def variables(self):
        """All optimizer state, in the order it was made: ``iterations`` first, then each
        variable's slots (variables in the order the optimizer first saw them), with
        optimizer-wide variables where ``build`` made them."""
        return list(self._state.values())

    @property
    def iterations(self):
        """The number of steps taken: a non-trainable int64 Variable."""
        return self._iterations

    @property
    def built(self):
        return bool(self._keys)

    def get_state(self):
        """``{name: numpy array}`` of all state, in the order of ``variables`` (copies on the host)."""
        return {key: _host_copy(v._value) for key, v in self._state.items()}

    def set_state(self, state):
        """Load ``get_state()``'s dict: the same keys, shapes as this optimizer's state.
        ``"learning_rate"`` may be missing (state saved before the rate was state: the rate
        stays) or extra (this optimizer follows a schedule, whose position is ``iterations``).

        Everything is checked before anything is assigned; an error names the keys
        that do not match.  A model's optimizer makes the slots of model variables
        it has not met yet from the state's keys; an optimizer of bare Variables must
        already have its slots (after a step, or ``build(var_list)``).
        """
        for target, value in self._checked_state(state):
            target._replace_value(value)

    def _checked_state(self, state):
        """``[(state variable, new array), ...]`` for ``state``, all checked, nothing assigned
        (``load_weights`` checks the weights too before either is assigned).  Slots made
        here for the state's model variables are taken back if the check fails."""
        with self._undone_on_error():
            self._build_from_keys(state)
            missing = [k for k in self._state if k not in state and k != "learning_rate"]
            unknown = [k for k in state if k not in self._state and k != "learning_rate"]
            if unknown or missing:
                parts = [f"{what} {keys}" for what, keys in
                         (("unknown names", unknown), ("missing names", missing)) if keys]
                hint = ""
                if unknown and self._keyed_by is None and not self.built:
                    hint = (" Build the optimizer first: optimizer.build(var_list), or compile "
                            "the model with it.")
                elif unknown and self._keyed_by is not None:
                    hint = (" The model has no variables yet: build it first (call it on a "
                            "batch)." if not self._keyed_by() else
                            " (The state of another model, or of another optimizer configuration?)")
                raise ValueError(f"Optimizer state does not match {self.name}'s: "
                                 f"{', '.join(parts)}.{hint}")
            plan = []
            for key, target in self._state.items():
                if key not in state:  # the learning rate, from state saved without it
                    continue
                value = numpy.asarray(backend.to_host(state[key]))
                if value.shape != target._value.shape:
                    raise ValueError(f"Optimizer state '{key}' has shape "
                                     f"{tuple(target._value.shape)}, the value given has shape "
                                     f"{value.shape}")
                xp = backend.array_module(target._value)
                plan.append((target, xp.array(value, dtype=target._value.dtype)))
        return plan

    def _build_from_keys(self, state):
        """Make the slots of the model variables ``state`` has keys for and this optimizer
        has not met yet (a model's optimizer only), in the model's order."""
        if self._keyed_by is None:
            return
        wanted = {key.rpartition("/")[0] for key in state if key not in self._state}
        new = [v for key, v in self._keyed_by() if key in wanted and v._id not in self._keys]
        if new:
            self.build(new)

    @contextlib.contextmanager
    def _undone_on_error(self):
        """Put this optimizer's attributes back as they were if the block raises."""
        saved = {k: (v.copy() if isinstance(v, (dict, list, set)) else v)
                 for k, v in vars(self).items()}
        try:
            yield
        except BaseException:
            vars(self).clear()
            vars(self).update(saved)
            raise

    # --- the learning rate -----------------------------------------------------------
    @property
    def learning_rate(self):
        """A float rate's Variable (``assign`` it, or set this property; ``float()`` reads
        it).  With a schedule or a callable: the rate the next step will use, a float."""
        lr = self._learning_rate
        if lr.__class__ is Variable:
            return lr
        return self._current_learning_rate(int(self._iterations._value))

    @learning_rate.setter
    def learning_rate(self, value):
        value = _checked_learning_rate(value)
        if value.__class__ is not float:
            self._learning_rate = value  # a schedule or a callable
        elif isinstance(self._learning_rate, schedules.LearningRateSchedule):
            raise TypeError("This optimizer was created with a LearningRateSchedule as its "
                            "learning_rate, so its learning rate is not settable to a number; "
                            "set a new schedule, or create it with a float learning_rate.")
        else:
            self._learning_rate = self._rate_variable(value)

    def _rate_variable(self, rate):
        """The float rate's Variable, state ``"learning_rate"``, made once and assigned ``rate``."""
        variable = self._state.get("learning_rate")
        if variable is None:
            variable = self._state["learning_rate"] = Variable(
                numpy.float32(rate), trainable=False, name="learning_rate", dtype="float32")
        else:
            variable.assign(numpy.float32(rate))
        return variable

    def _current_learning_rate(self, step):
        lr = self._learning_rate
        if lr.__class__ is Variable:
            return float(lr._value)
        if isinstance(lr, schedules.LearningRateSchedule):
            return float(lr(step))
        return float(lr())  # a callable of no arguments, as in Keras

    def _learning_rate_tensor(self, iterations):
        """The rate of the step about to be taken, as a scalar tensor: a float rate's Variable
        itself (so an assigned rate reaches a traced step, which reads it when it runs), or
        a schedule evaluated with ops on the ``iterations`` tensor (float64)."""
        lr = self._learning_rate
        if lr.__class__ is Variable:
            return lr
        if isinstance(lr, schedules.LearningRateSchedule):
            value = schedules.evaluate(lr, cast(iterations, "float64"))
        else:
            value = lr()  # a callable of no arguments, as in Keras
        value = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype="float64")
        return value if value.dtype == "float64" else cast(value, "float64")

    # --- weight decay --------------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exempt these variables, and those whose name contains one of ``var_names``
        (a regular expression search), from weight decay (Keras's method)."""
        self._no_decay_ids.update(v._id for v in var_list or ())
        if var_names:
            self._no_decay_pattern = re.compile("|".join(set(var_names)))
        self._decays.clear()

    def _decays_weight(self, variable):
        decays = self._decays.get(variable._id)
        if decays is None:
            pattern = self._no_decay_pattern
            decays = self._decays[variable._id] = not (
                variable._id in self._no_decay_ids
                or (pattern is not None and pattern.search(variable.name) is not None))
        return decays

    # --- taking a step ----------------------------------------------------------------------
    def minimize(self, loss, var_list, tape=None):
        """One step on ``loss``: the general entry point of every optimizer.

        With ``tape``, ``loss`` is the tensor that tape recorded.  Without it,
        ``loss`` is a function of no arguments, evaluated under a new
        ``GradientTape``.  ``var_list`` may be a function returning the list.
        Returns ``iterations``.
        """
        grads, var_list = self._compute_gradients(loss, var_list, tape)
        return self.apply_gradients(zip(grads, var_list))

    def _compute_gradients(self, loss, var_list, tape=None):
        """``(gradients, variables)`` of ``loss`` as ``minimize`` takes them."""
        if tape is None and not callable(loss):
            raise ValueError("minimize: `tape` is required when the loss is a tensor; pass a "
                             "function of no arguments as the loss to have minimize record it.")
        if callable(loss):
            tape = GradientTape() if tape is None else tape
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        return tape.gradient(loss, var_list), var_list

    def apply_gradients(self, grads_and_vars):
        """Update each variable from its gradient; ``grads_and_vars`` is an iterable of
        ``(gradient, variable)`` pairs (``zip(grads, vars)``).  Returns ``iterations``."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("apply_gradients received no (gradient, variable) pairs.")
        grads, variables = zip(*pairs)
        return self.apply(grads, variables)

    def apply(self, grads, trainable_variables=None):
        """Keras 3's form: gradients and variables as two lists; without variables, the
        ones the optimizer was built on, in that order.  Returns ``iterations``."""
        if trainable_variables is None:
            if len(grads) != len(self._trained):
                raise ValueError(f"apply got {len(grads)} gradients without variables, but the "
                                 f"optimizer tracks {len(self._trained)} variables.")
            trainable_variables = self._trained
        # under a strategy that wrapped this optimizer: the global batch's gradients (ChainerMN's
        # multi-node optimizer); the gradients themselves on one process
        grads = replication.sum_gradients(self, grads)
        grads, variables = self._gradient_tensors(grads, trainable_variables)
        iterations = self._iterations
        lr = self._learning_rate_tensor(iterations)
        grads = self._clip_gradients(grads)
        if self.weight_decay:
            self._apply_weight_decay(variables, lr)
        self._begin_step(iterations)
        update_step = self.update_step
        for g, v in zip(grads, variables):
            update_step(g, v, lr)
            if v._constraint is not None:
                v.assign(v._constraint(v))
        if context().trace is None:  # eagerly, the counter's next array, without assign's checks
            iterations._replace_value(iterations._value + 1)
        else:
            iterations.assign_add(1)
        return iterations

    # --- the shared work, in the order apply does it -------------------------------------------
    def _gradient_tensors(self, grads, variables):
        """The pairs with a gradient, as tensors of their variable's dtype; builds new variables."""
        kept_grads, kept_vars, missing = [], [], []
        keys = self._keys
        for g, v in zip(grads, variables):
            if not isinstance(v, Variable):
                raise TypeError(f"Optimizers update tapeflow Variables, got {type(v).__name__}")
            if g is None:
                missing.append(v)
                continue
            value = v._value
            if not isinstance(g, Tensor):
                g = Tensor(backend.asarray(g, like=value))
            if g._value.dtype != value.dtype:
                g = cast(g, value.dtype)
            if g._value.shape != value.shape:
                raise ValueError(f"Gradient for variable '{v.name}' has shape "
                                 f"{tuple(g._value.shape)}, the variable has shape "
                                 f"{tuple(value.shape)}")
            kept_grads.append(g)
            kept_vars.append(v)
        if not kept_grads:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[v.name for v in missing]}. Is the loss computed from them, "
                             "under the tape?")
        if missing:
            warnings.warn(f"Gradients do not exist for variables {[v.name for v in missing]} "
                          "when minimizing the loss; they were left unchanged.", stacklevel=4)
        new = [v for v in kept_vars if v._id not in keys]
        if new:
            self.build(new)
        return kept_grads, kept_vars

    def _clip_gradients(self, grads):
        if self.clipnorm is not None:
            return [_clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm is not None:
            return _clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue is not None:
            c = self.clipvalue
            return [clip_by_value(g, -c, c) for g in grads]
        return grads

    def _apply_weight_decay(self, variables, lr):
        kept = {}  # 1 - lr * weight_decay, in each variable dtype met
        for v in variables:
            if self._decays_weight(v):
                dtype = v._value.dtype
                if dtype not in kept:
                    rate = lr if dtype == lr._value.dtype else cast(lr, dtype)
                    kept[dtype] = 1.0 - rate * self.weight_decay
                self._store(v, multiply(v, kept[dtype]))

    def _key_of(self, variable, structure=None):
        """The variable's key, fixed on first sight: its key in the model's structure when
        this is a model's optimizer and the model holds it, else its name; made unique."""
        key = self._keys.get(variable._id)
        if key is None:
            if structure is None:
                structure = self._structure()
            base = key = structure.get(variable._id, variable._name)
            n = 0
            while key in self._taken_keys:
                n += 1
                key = f"{base}_{n}"
            self._keys[variable._id] = key
            self._taken_keys.add(key)
            self._trained.append(variable)
        return key

    def _structure(self):
        """``{id of a model variable: its key}`` from the model's structure, or ``{}``."""
        return {} if self._keyed_by is None else {v._id: key for key, v in self._keyed_by()}

    def _key_by_structure(self, keyed):
        """Key model variables by ``keyed()``'s ``[(key, variable), ...]`` from now on:
        ``Model.compile`` passes ``weights_io.weight_keys`` of the model.  The variables
        already seen are keyed again (structure keys first), their slots renamed."""
        self._keyed_by = keyed
        if not self._trained:
            return
        structure = self._structure()
        trained, self._trained, self._keys, self._taken_keys = self._trained, [], {}, set()
        for v in sorted(trained, key=lambda v: v._id not in structure):  # stable
            self._key_of(v, structure)
        self._trained = trained  # the order the optimizer first saw them, as before
        renamed = {}
        for var_id, slots in self._slots.items():
            for slot_name, slot in slots.items():
                slot._name = f"{self._keys[var_id]}/{slot_name}"
                renamed[slot._id] = slot
        self._state = {(renamed[v._id]._name if v._id in renamed else key): v
                       for key, v in self._state.items()}

    # --- config ----------------------------------------------------------------------------------
    def get_config(self):
        """The constructor's arguments (subclasses add theirs); no state.  A float rate is
        its Variable's current value, as the shortest decimal that rounds to it (0.01, not
        0.009999999776); a schedule is written as ``schedules.serialize`` writes it; a plain
        callable is kept as is."""
        lr = self._learning_rate
        if lr.__class__ is Variable:
            lr = float(str(numpy.float32(backend.to_host(lr._value))))
        elif isinstance(lr, schedules.LearningRateSchedule):
            lr = schedules.serialize(lr)
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
                "clipvalue": self.clipvalue}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A new optimizer from ``get_config()``'s dict (a Keras config works too)."""
        config = dict(config)
        for key, off in _KERAS_ONLY_DEFAULTS.items():
            if key in config and config.pop(key) != off:
                raise ValueError(f"tapeflow optimizers do not support Keras's `{key}`.")
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"], custom_objects)
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r} iterations={int(self._iterations._value)}>"


def _checked_learning_rate(value):
    if isinstance(value, schedules.LearningRateSchedule) or callable(value):
        return value
    if isinstance(value, bool):
        value = None  # falls through to the error
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"`learning_rate` must be a float, a LearningRateSchedule or a callable "
                         f"of no arguments; got {value!r}") from None


def _global_norm_kernel(*grads):
    """sqrt of the sum of the squares of all elements of all ``grads`` (BLAS dot products)."""
    xp = backend.array_module(grads[0])
    return xp.sqrt(sum(xp.vdot(g, g) for g in grads))


# used for clipping an optimizer step, which is not differentiated
GLOBAL_NORM = def_primitive("GlobalNorm", _global_norm_kernel, not_differentiable=True)


def _clip_by_norm(g, clipnorm):
    norm = apply_op(GLOBAL_NORM, (g,))
    return g * (clipnorm / maximum(norm, clipnorm))


def _clip_by_global_norm(grads, clipnorm):
    """Keras's: one scale for all; a non-finite norm gives NaN gradients, not silently zero ones."""
    norm = apply_op(GLOBAL_NORM, tuple(grads))
    scale = clipnorm / maximum(norm, clipnorm) + (norm - norm)
    return [g * (scale if g._value.dtype == scale._value.dtype else cast(scale, g._value.dtype))
            for g in grads]


def _host_copy(array):
    return numpy.array(backend.to_host(array), copy=True)
