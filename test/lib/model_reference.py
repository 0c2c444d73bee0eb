"""Independent float64 NumPy references of the example models (examples/*.tsr).

Written from the language reference (docs/language.md §5), the geo op
semantics (docs/geo.md) and docs/math.md, not from the compiler: every layer is
the textbook formula, group logs are scipy.linalg.logm followed by the
group's vee map (docs/groups/*.md), and nothing here knows how the compiler
tiles, fuses or factors anything. Models take {name: float64 array} inputs
and params (names as in the manifest, block params `<prefix>.<i>.<param>`)
and return {output name: float64 array}.
"""
import math

import numpy as np
import scipy.linalg
import scipy.special

# --- dense layers (docs/language.md §5) ------------------------------------------


def gelu(x):
    """Exact GELU: ½x(1 + erf(x/√2))."""
    return 0.5 * x * (1.0 + scipy.special.erf(x / math.sqrt(2.0)))


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def rms_norm(x, gamma, eps=1e-6):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * gamma


def heads(x, H):
    """[L, D] -> [H, L, D/H], head h = features [h·D/H, (h+1)·D/H)."""
    L, D = x.shape
    return x.reshape(L, H, D // H).transpose(1, 0, 2)


def merge_heads(x):
    H, L, Dh = x.shape
    return x.transpose(1, 0, 2).reshape(L, H * Dh)


# --- groups: vee maps and λ blocks (docs/groups/*.md) -------------------------------

def _vee_so3(X):
    # orthogonal projection onto so(3): the antisymmetric part
    A = 0.5 * (X - X.T)
    return np.array([A[2, 1], A[0, 2], A[1, 0]])


class Group:
    """A matrix group for the reference: n, block sizes and a vee map."""

    def __init__(self, name, n, blocks, vee):
        self.name, self.n, self.blocks, self.vee = name, n, list(blocks), vee
        self.k = sum(blocks)

    def block_of_coord(self):
        return np.repeat(np.arange(len(self.blocks)), self.blocks)


BUILTIN = {
    "SO2": Group("SO2", 2, [1], lambda X: np.array([0.5 * (X[1, 0] - X[0, 1])])),
    "SE2": Group("SE2", 3, [1, 2],
                 lambda X: np.array([0.5 * (X[1, 0] - X[0, 1]), X[0, 2], X[1, 2]])),
    "SO3": Group("SO3", 3, [3], _vee_so3),
    "SE3": Group("SE3", 4, [3, 3],
                 lambda X: np.concatenate([_vee_so3(X[:3, :3]), X[:3, 3]])),
    "Aff2": Group("Aff2", 3, [4, 2],
                  lambda X: np.concatenate([X[:2, :2].ravel(), X[:2, 2]])),
    "Sim3": Group("Sim3", 4, [3, 3, 1],
                  lambda X: np.concatenate([_vee_so3(X[:3, :3]), X[:3, 3],
                                            [np.trace(X[:3, :3]) / 3.0]])),
}


def declared_group(name, generators, blocks=None):
    """A generator-declared group (docs/language.md §7): coordinates by least
    squares against the generators; `blocks` sizes (default one block)."""
    G = np.stack([np.asarray(g, dtype=np.float64).ravel() for g in generators], axis=1)
    n = int(round(math.sqrt(G.shape[0])))

    def vee(X):
        return np.linalg.lstsq(G, X.ravel(), rcond=None)[0]

    return Group(name, n, blocks or [len(generators)], vee)


def log_coords(group, M):
    """Coordinates of the principal log of M (float64 via scipy.linalg.logm)."""
    X = scipy.linalg.logm(M)
    return group.vee(np.real(X))


def pairwise_coords(group, g):
    """w[i, j] = log(g_i⁻¹ g_j) for g: [L, n, n] -> [L, L, k].

    log(g_j⁻¹ g_i) = −log(g_i⁻¹ g_j) off the cut, so only i < j is computed
    (the norms, all attention needs, are unaffected even on the cut)."""
    L = g.shape[0]
    inv = np.linalg.inv(g)
    w = np.zeros((L, L, group.k))
    for i in range(L):
        for j in range(i + 1, L):
            w[i, j] = log_coords(group, inv[i] @ g[j])
            w[j, i] = -w[i, j]
    return w


def lie_attention(group, g, v, heads=1, tau=1.0, lam=1.0, causal=False, coords=None):
    """docs/language.md §5: per head h, s_ij = −‖log(g_i⁻¹g_j)‖²_λh/τ_h,
    out_i = Σ_j softmax_j(s_ij) v_j on the head's slice of v."""
    L, D = v.shape
    w = pairwise_coords(group, g) if coords is None else coords
    tau = np.asarray(tau, dtype=np.float64).reshape(-1)
    if tau.size == 1:
        tau = np.repeat(tau, heads)
    lam = np.asarray(lam, dtype=np.float64)
    if lam.ndim == 0:
        lam = np.full(len(group.blocks), float(lam))
    if lam.ndim == 1:
        lam = np.tile(lam, (heads, 1))
    assert lam.shape == (heads, len(group.blocks)) and tau.shape == (heads,)
    blk = group.block_of_coord()
    vh = v.reshape(L, heads, D // heads)
    out = np.zeros_like(v).reshape(L, heads, D // heads)
    for h in range(heads):
        d2 = np.einsum("ijk,k->ij", w ** 2, lam[h][blk])
        s = -d2 / tau[h]
        if causal:
            s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)
        out[:, h, :] = softmax(s, -1) @ vh[:, h, :]
    return out.reshape(L, D)


def dist2_pairwise(group, a, b, lam=1.0, coords=None):
    """‖log(a_i⁻¹ b_j)‖²_λ for all pairs (a, b the same tokens when coords given)."""
    if coords is None:
        inv = np.linalg.inv(a)
        coords = np.array([[log_coords(group, inv[i] @ b[j]) for j in range(len(b))]
                           for i in range(len(a))])
    lam = np.asarray(lam, dtype=np.float64).reshape(-1)
    if lam.size == 1:
        lam = np.repeat(lam, len(group.blocks))
    return np.einsum("ijk,k->ij", coords ** 2, lam[group.block_of_coord()])


# --- Grassmann mixing (docs/math.md §3, docs/geo.md) ---------------------------------------

def plucker(u, v):
    """p_ab = u_a v_b − u_b v_a for a < b, lexicographic."""
    r = u.shape[-1]
    a, b = np.triu_indices(r, 1)
    return u[..., a] * v[..., b] - u[..., b] * v[..., a]


def grassmann_mix(h, w_red, b_red, w_plucker, b_plucker, w_gate, b_gate,
                  offsets, causal=False, eps=1e-6):
    L, d = h.shape
    z = h @ w_red.T + b_red
    acc = np.zeros((L, d))
    count = np.zeros(L)
    for delta in offsets:
        for t in range(L):
            s = t - delta if causal else t + delta
            if not 0 <= s < L:
                continue
            p = plucker(z[t], z[s])
            p = p / max(np.linalg.norm(p), eps)
            acc[t] += w_plucker @ p + b_plucker
            count[t] += 1
    g = np.where(count[:, None] > 0, acc / np.maximum(count, 1)[:, None], 0.0)
    alpha = sigmoid(np.concatenate([h, g], axis=-1) @ w_gate.T + b_gate)
    return alpha * h + (1 - alpha) * g


# --- relational attention (docs/math.md §4, docs/geo.md) -------------------------------------

def relational_norm(x, eps=1e-5):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps)


def relational_attention(x, g_qk, g_vo, scale=None, causal=False):
    L, d = x.shape
    H = g_qk.shape[0]
    if scale is None:
        scale = 1.0 / math.sqrt(d / H)
    out = np.zeros_like(x)
    for h in range(H):
        s = scale * (x @ g_qk[h] @ x.T)
        if causal:
            s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)
        out += softmax(s, -1) @ (x @ g_vo[h])
    return out


# --- the example models ---------------------------------------------------------------

def se3_pose_attention(inp, p, coords=None):
    """examples/se3_pose_attention.tsr (PoseAttention)."""
    G = BUILTIN["SE3"]
    g, h = inp["pose"], inp["x"]
    w = pairwise_coords(G, g) if coords is None else coords
    for i in range(2):
        q = lambda n: p["blocks.%d.%s" % (i, n)]
        v = layer_norm(h, q("ln1_g"), q("ln1_b")) @ q("Wv")
        a = lie_attention(G, g, v, heads=4, tau=[0.5, 1.0, 2.0, 4.0],
                          lam=[[1.0, 0.1], [1.0, 0.5], [1.0, 1.0], [0.5, 2.0]],
                          coords=w)
        h1 = h + a @ q("Wo")
        f = gelu(layer_norm(h1, q("ln2_g"), q("ln2_b")) @ q("W1") + q("b1")) @ q("W2") + q("b2")
        h = h1 + f
    return {"y": layer_norm(h, p["lnf_g"], p["lnf_b"])}


def se2_planar(inp, p, coords=None):
    """examples/se2_planar.tsr (PlanarTrajectory)."""
    G = BUILTIN["SE2"]
    g, obs = inp["pose"], inp["obs"]
    w = pairwise_coords(G, g) if coords is None else coords
    a = lie_attention(G, g, obs @ p["Wv"], heads=2, tau=[1.0, 0.25], lam=[2.0, 1.0],
                      causal=True, coords=w)
    h = rms_norm(obs + a @ p["Wo"], p["gain"])
    return {"control": relu(h) @ p["Wh"],
            "distances": dist2_pairwise(G, g, g, lam=[2.0, 1.0], coords=w)}


def grassmann_lm(inp, p, layers=6):
    """examples/grassmann_lm.tsr (GrassmannLM)."""
    h = inp["x"]
    for i in range(layers):
        q = lambda n: p["layers.%d.%s" % (i, n)]
        mixed = grassmann_mix(h, q("w_red"), q("b_red"), q("w_plu"), q("b_plu"),
                              q("w_gate"), q("b_gate"), offsets=[1, 2, 4, 8, 12, 16],
                              causal=True)
        n = layer_norm(mixed, q("ln_g"), q("ln_b"))
        h = n + gelu(n @ q("W1") + q("b1")) @ q("W2") + q("b2")
    return {"logits": h @ p["W_out"]}


def relational_block(inp, p):
    """examples/relational_block.tsr (RelationalBlock)."""
    x = inp["x"]
    n = relational_norm(x, eps=1e-5)
    a = relational_attention(n, p["g_qk"], p["g_vo"], scale=0.25, causal=True)
    return {"y": relational_norm(x + a)}


HEIS3 = declared_group("Heis3", [
    [[0, 1, 0], [0, 0, 0], [0, 0, 0]],
    [[0, 0, 0], [0, 0, 1], [0, 0, 0]],
    [[0, 0, 1], [0, 0, 0], [0, 0, 0]],
], blocks=[2, 1])


def heisenberg(inp, p):
    """examples/heisenberg.tsr (HeisenbergAttention)."""
    return {"y": lie_attention(HEIS3, inp["g"], inp["x"] @ p["Wv"], heads=2, tau=1.0,
                               lam=[1.0, 0.25])}
