"""Functions that the AutoGraph tests convert, from TensorFlow's reference tests
(tensorflow/python/autograph/tests/*.py), module-level so that their source is available."""
import tapeflow as tf


# --- cond_basic_test.py --------------------------------------------------------------------------
def if_no_vars(c, v):
    v.assign(0)
    if c:
        v.assign_add(1)
    return v.read_value()


def if_else_no_vars(c, v):
    v.assign(0)
    if c:
        v.assign_add(1)
    else:
        v.assign_add(2)
    return v.read_value()


def if_one_var(n):
    i = 0
    if i < n:
        i += 1
    return i


def if_else_one_var(n):
    i = 0
    if i < n:
        i += 1
    else:
        i += 2
    return i


def if_two_vars(n):
    i = 0
    j = 1
    if i < n:
        i += 1
        j *= 10
    return i, j


def if_else_two_vars(n):
    i = 0
    j = 1
    if i < n:
        i += 1
        j *= 10
    else:
        i += 2
        j *= 20
    return i, j


def if_creates_var(c):
    if c:
        i = 1
    return i


def if_else_creates_var(c):
    if c:
        i = 1
    else:
        i = 2
    return i


def else_creates_var(c):
    if c:
        pass
    else:
        i = 2
    return i


def if_destroys_var(c):
    i = 1
    if c:
        del i
    return i


def if_else_destroys_var(c):
    i = 1
    if c:
        del i
    else:
        del i
    return i


def else_destroys_var(c):
    i = 2
    if c:
        pass
    else:
        del i
    return i


def if_returns_none(c):
    i = 0
    j = 1
    if c:
        i = None
        j = 2
    return i, j


def if_else_returns_none(c):
    if c:
        i = None
        j = 1
    else:
        i = None
        j = 2
    return i, j


def else_returns_none(c):
    i = 1
    j = 1
    if c:
        pass
    else:
        i = None
        j = 2
    return i, j


def if_local_var(c):
    i = 0
    if c:
        j = 1
        i = j + 1
    return i


def if_else_local_var(c):
    i = 0
    if c:
        j = 1
    else:
        j = 2
        i = j + 1
    return i


def if_locally_modified_var(c):
    i = 0
    j = 2
    if c:
        j = j + 1
        i = j + 1
    return i


def successive_if_elses(n1, n2):
    s = 0
    i = 0
    if i < n1:
        s = s * 10 + i
        i += 1
    else:
        s = s * 11 + i
        i += 2
    i = 0
    if i < n2:
        s = s * 10 + i
        i += 1
    else:
        s = s * 11 + i
        i += 2
    return s


def nested_if_temporarily_undefined_return(c1, c2):
    if c1:
        if c2:
            return 1
    return 2


def nested_if_elses(n1, n2):
    i = 0
    l = 0  # noqa: E741 - upstream's name
    if i < n1:
        j = 0
        s = 0
        if j < n2:
            s = s * 10 + i * j
            j += 1
        else:
            s = s * 11 + i * j
            j += 2
        l = l * 1000 + s  # noqa: E741
        i += 1
    else:
        j = 0
        s = 0
        if j < n2:
            s = s * 12 + i * j
            j += 3
        else:
            s = s * 13 + i * j
            j += 4
        l = l * 2000 + s  # noqa: E741
        i += 1
    return l


# --- basic_ifexp_test.py -------------------------------------------------------------------------
def consecutive_conds(x):
    if x > 0:
        x = -x if x < 5 else x
    else:
        x = -2 * x if x < 5 else 1
    if x > 0:
        x = -x if x < 5 else x
    else:
        x = (3 * x) if x < 5 else x
    return x


def cond_with_multiple_values(x):
    if x > 0:
        x = -x if x < 5 else x
        y = 2 * x if x < 5 else x
        z = -y if y < 5 else y
    else:
        x = 2 * x if x < 5 else x
        y = -x if x < 5 else x
        z = -y if y < 5 else y
    return x, y, z


def ifexp_with_imbalanced_structure(x):
    # upstream's condition is tf.size(x) > 0: a trace per shape knows sizes and folds it to a
    # Python bool (no error to raise), so the condition here depends on the values instead
    traced_args = tf.unstack(x) if tf.reduce_sum(x) > 0 else []
    return traced_args


# --- loop_basic_test.py --------------------------------------------------------------------------
def while_no_vars(n, v):
    v.assign(0)
    while v.read_value() < n:
        v.assign_add(1)
    return v.read_value()


def for_no_vars(l, v):  # noqa: E741
    v.assign(0)
    for _ in l:
        v.assign_add(1)
    return v.read_value()


def while_one_var(n):
    i = 0
    while i < n:
        i = i * 10 + 1
    return i


def for_one_var(l):  # noqa: E741
    i = 0
    for i in l:
        pass
    return i


def while_two_vars(n):
    s = 0
    i = 0
    while i < n:
        s = s * 10 + i
        i += 1
    return s


def for_two_vars(l):  # noqa: E741
    s = 0
    for i in l:
        s = s * 10 + i
    return s


def while_else(x, y):
    s = 0
    while x > 0:
        x -= 1
        if x > y:
            break
        s += x
    else:
        s = -100
    return s


def for_else(l1, l2):
    s = 0
    for c in l1:
        if c in l2:
            break
        s = s * 10 + c
    else:
        s = -1000
    return s


def while_creates_var(n):
    i = 0
    while i < n:
        i = n + 1
        j = i + 1
    return i, j


def successive_while_loops(n1, n2):
    s = 0
    i = 0
    while i < n1:
        s = s * 10 + i
        i += 1
    i = 0
    while i < n2:
        s = s * 10 + i
        i += 1
    return s


def successive_for_loops(l1, l2):
    s = 0
    for i in l1:
        s = s * 10 + i
    for i in l2:
        s = s * 10 + i
    return s


# --- loop_control_flow_test.py -------------------------------------------------------------------
def continue_in_single_for(l):  # noqa: E741
    s = 0
    for c in l:
        if c % 2 > 0:
            continue
        s += c
    return s


def continue_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        if x % 2 > 0:
            continue
        s += x
    return s


def break_in_single_for(l):  # noqa: E741
    s = 0
    for c in l:
        if c % 2 > 0:
            break
        s += c
    return s


def unconditional_return_in_single_for(l):  # noqa: E741
    s = 0
    for c in l:
        s += c
        return s
    return s


def effectively_unconditional_return_in_single_for(l):  # noqa: E741
    s = 0
    for c in l:
        s += c
        if c % 2 > 0:
            return s
        else:
            return -s
    return s


def unconditional_return_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        s += x
        return s
    return s


def break_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        if x % 2 > 0:
            break
        s += x
    return s


def multiple_breaks_in_single_while(n):
    s = 1
    i = 0
    while i < n:
        i += 1
        if i > 10 * n:
            break
        if i == n:
            break
        s = s * 10 + i
    return i, s


def break_followed_by_cond_in_single_while(x):
    while x > 0:
        if x == 2:
            break
        if x > 0:
            x -= 1
    return x


def continue_in_inner_for(m):
    s = 0
    for l in m:  # noqa: E741
        for c in l:
            if c % 2 > 0:
                continue
            s += c
    return s


def break_in_inner_for(m):
    s = 0
    for l in m:  # noqa: E741
        for c in l:
            if c % 2 > 0:
                break
            s += c
    return s


def break_continue_in_inner_for(m):
    s = 0
    for l in m:  # noqa: E741
        for c in l:
            if c % 2 > 0:
                break
            else:
                continue
            s += c
    return s


def break_in_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        while y > 0:
            y -= 1
            if ((x + y) % 2) == 0:
                break
            s += x + y
    return s


# --- early_return_test.py ------------------------------------------------------------------------
def return_with_default(x):
    if x > 0:
        return x
    return x * x


def return_dependent_on_local(c):
    t = tf.constant(1)
    if c:
        return t
    t = tf.stack([t, t])
    return tf.reduce_sum(t)


def return_possibly_undefined(x):
    if x > 0:
        if x < 5:
            return x
    else:
        return x * x * x


def nested_ifs(x):
    if x > 0:
        if x < 5:
            return x
        else:
            return x * x
    else:
        return x * x * x


def possible_return_before_loop(c1, c2, n):
    if c1:
        if c2:
            return 1
    for _ in range(n):
        pass
    return 2
