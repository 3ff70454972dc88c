"""The demo competition's task: Algorithm 2.3 of seed 000 on scikit-image's bundled images.

The task: predict the 6-bit grey level (64 classes) of a pixel from the patch above and to its
left. The seed used 35 x 30 patches of van Hateren images; here the patch is 9 pixels wide and 5
tall (4 full rows above the pixel, and the 4 pixels to its left on its own row), cut from the
natural images that ship inside the scikit-image wheel (so the demo works offline), converted to
grey and quantised to 64 levels.

The field of agents is deliberately diverse: different model families (linear predictors with a
discretised Laplace or Gaussian residual, the median edge detector of LOCO-I, context histograms,
nearest neighbours, a global histogram), different features (left pixel only, above only, the four
causal neighbours, the whole patch), different training subsets (random fractions, single images,
dark images only) and some biased ones (over- or under-confident, shifted by a grey level). All
are fast closed-form fits, so the whole field is built in a few seconds.

**Other numbers of classes.** Every function takes ``levels`` (default :data:`K` = 64, the demo's task):
the same images quantised to ``levels`` grey levels (256: the photographs' own 8 bits) and the same field
of agents over that many classes, with every quantity measured in grey levels (the warp's noise, the
residual scales' floors, the "dark" threshold) scaled by ``levels / 64`` so that the task is the same
physical one. The default gives the demo's data bit for bit. It is how the market benchmarks reach
256 classes on real predictions (``benchmarks/bench_markets_real_eta2.py --levels 256``).

**Hidden labels are not recomputable from public data.** The images ship with scikit-image, so
test patches cut from them can be located in the public images and their labels read off (issue
14: all 2,000 demo patches were found in 3 s). Pixels are therefore cut from *warped copies* of the
images (:func:`warp_image`: a random rotation, scale and shift with bilinear interpolation, plus
noise of half a grey level before quantisation). The training copies are warped from the public
``seed``; the test copies from a ``secret`` the server never publishes, so the test patches match
no position of any public image, and the test image index is not published either.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import numpy as np
from scipy.ndimage import affine_transform
from scipy.special import logsumexp

K = 64
PATCH_W, PATCH_ROWS = 9, 4  # 4 rows above (9 wide, centred) + 4 pixels to the left
MARGIN = 6
IMAGES = (
    "camera",
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "coins",
    "moon",
    "clock",
    "brick",
    "grass",
    "gravel",
    "cat",
)


def _unit(levels: int) -> float:
    """One grey level of the 64-level task in units of ``levels`` grey levels (1.0 for the demo's)."""
    return levels / K


def _levels(levels: int) -> np.ndarray:
    return LEVELS if levels == K else np.arange(levels, dtype=np.float64)


def load_images(levels: int = K) -> list[np.ndarray]:
    """The bundled images as ``levels`` grey levels (default 6 bits: uint8 in 0..63); those that fail to
    load are skipped."""
    if not 2 <= levels <= 256:
        raise ValueError(f"levels must be in 2..256 (uint8 grey levels); got {levels}")
    import skimage.data
    from skimage.color import rgb2gray, rgba2rgb

    out = []
    for name in IMAGES:
        try:
            im = getattr(skimage.data, name)()
        except Exception:  # noqa: BLE001 - an image missing from this wheel is simply skipped
            continue
        im = np.asarray(im)
        if im.ndim == 3:
            if im.shape[2] == 4:
                im = rgba2rgb(im)
            g = rgb2gray(im)
        else:
            g = im.astype(np.float64) / (255.0 if im.dtype == np.uint8 else max(1.0, im.max()))
        out.append(np.clip((g * levels).astype(np.int64), 0, levels - 1).astype(np.uint8))
    return out


NOISE = 0.5
"""Standard deviation (grey levels) of the noise a warped copy gets before quantisation."""


def warp_image(im: np.ndarray, rng: np.random.Generator, levels: int = K) -> np.ndarray:
    """A copy of ``im`` (grey levels 0..levels-1) rotated by a random angle, scaled by a random factor in
    [0.8, 1.25] and shifted by a random sub-pixel offset (bilinear, borders reflected), plus
    Gaussian noise of ``NOISE`` 64-level grey levels, re-quantised to 0..levels-1. Which copy depends on
    ``rng`` only."""
    theta, scale = rng.uniform(0.0, 2.0 * np.pi), rng.uniform(0.8, 1.25)
    c, s_ = np.cos(theta) / scale, np.sin(theta) / scale
    mat = np.array([[c, -s_], [s_, c]])
    centre = (np.asarray(im.shape, dtype=np.float64) - 1.0) / 2.0
    offset = centre - mat @ centre + rng.uniform(-0.5, 0.5, 2)
    out = affine_transform(im.astype(np.float64), mat, offset=offset, order=1, mode="reflect")
    out += rng.normal(0.0, NOISE * _unit(levels), out.shape)
    return np.clip(np.floor(out + 0.5), 0, levels - 1).astype(np.uint8)


@dataclass
class PixelData:
    x: np.ndarray  # (n, 40) causal patch, raster order
    y: np.ndarray  # (n,) grey level of the pixel
    img: np.ndarray  # (n,) image number

    def __len__(self) -> int:
        return len(self.y)


def sample_pixels(images: list[np.ndarray], n: int, rng: np.random.Generator) -> PixelData:
    """Algorithm 2.3: random image, random pixel away from the edge, the patch before it."""
    half = PATCH_W // 2
    xs, ys, ims = [], [], []
    which = rng.integers(0, len(images), n)
    for j, im in enumerate(images):
        m = int((which == j).sum())
        if m == 0:
            continue
        h, w = im.shape
        r = rng.integers(MARGIN, h - MARGIN, m)
        c = rng.integers(MARGIN, w - MARGIN, m)
        above = [im[r - dr, c + dc] for dr in range(PATCH_ROWS, 0, -1) for dc in range(-half, half + 1)]
        left = [im[r, c - dc] for dc in range(half, 0, -1)]
        xs.append(np.stack(above + left, axis=1))
        ys.append(im[r, c])
        ims.append(np.full(m, j))
    x = np.concatenate(xs).astype(np.float64)
    perm = rng.permutation(len(x))
    return PixelData(x[perm], np.concatenate(ys).astype(np.int64)[perm], np.concatenate(ims)[perm])


# named causal neighbours (column indices into the patch)
_half = PATCH_W // 2
W_ = PATCH_ROWS * PATCH_W + _half - 1  # left
N_ = (PATCH_ROWS - 1) * PATCH_W + _half  # above
NW_ = N_ - 1
NE_ = N_ + 1
WW_ = W_ - 1
NN_ = N_ - PATCH_W
FEATURES = {
    "left": [W_],
    "above": [N_],
    "four": [W_, N_, NW_, NE_],
    "six": [W_, N_, NW_, NE_, WW_, NN_],
    "patch": list(range(PATCH_ROWS * PATCH_W + _half)),
}
LEVELS = np.arange(K, dtype=np.float64)


def _lstsq(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Least squares through the (tiny) normal equations, with a whisper of ridge for stability."""
    G = A.T @ A
    G[np.diag_indices_from(G)] += 1e-6 * max(1.0, float(np.trace(G)) / len(G))
    return np.linalg.solve(G, A.T @ b)


def _norm(s: np.ndarray) -> np.ndarray:
    return s - logsumexp(s, axis=1, keepdims=True)


def _activity(x: np.ndarray) -> np.ndarray:
    """Local gradient magnitude from the causal neighbours (the context of LOCO-I)."""
    return (np.abs(x[:, W_] - x[:, NW_]) + np.abs(x[:, N_] - x[:, NW_]) + np.abs(x[:, N_] - x[:, NE_])) / 3.0


def _scale_model(train_x, resid, kind):
    """Fit ``scale = a + b * activity`` to the absolute (Laplace) or squared (Gaussian) residual."""
    act = _activity(train_x)
    target = np.abs(resid) if kind == "laplace" else resid**2
    A = np.column_stack([np.ones_like(act), act])
    coef = _lstsq(A, target)
    return coef


def _residual_logp(mu, scale, kind, levels=K):
    d = _levels(levels)[None, :] - mu[:, None]
    if kind == "laplace":
        return _norm(-np.abs(d) / scale[:, None] - np.log(scale)[:, None])
    return _norm(-0.5 * d**2 / scale[:, None] ** 2)


def linear_agent(tr: PixelData, te: PixelData, feats, kind="laplace", temp=1.0, shift=0.0, adaptive=True, levels=K):
    """Least-squares predictor of the grey level + discretised Laplace/Gaussian residual (``shift`` and the
    scale floors in 64-level grey levels)."""
    u = _unit(levels)
    A = np.column_stack([tr.x[:, feats], np.ones(len(tr))])
    coef = _lstsq(A, tr.y.astype(float))
    mu_tr = A @ coef
    resid = tr.y - mu_tr
    mu = np.column_stack([te.x[:, feats], np.ones(len(te))]) @ coef + shift * u
    if adaptive:
        c = _scale_model(tr.x, resid, kind)
        s = c[0] + c[1] * _activity(te.x)
        s = np.sqrt(np.maximum(s, 0.09 * u * u)) if kind == "gauss" else np.maximum(s, 0.3 * u)
    else:
        s = np.full(len(te), max(np.abs(resid).mean() if kind == "laplace" else resid.std(), 0.3 * u))
    return _residual_logp(mu, s * temp, kind, levels)


def _med(x: np.ndarray) -> np.ndarray:
    """The median edge detector's prediction (LOCO-I / JPEG-LS) from the causal neighbours."""
    a, b, c = x[:, W_], x[:, N_], x[:, NW_]
    return np.where(
        c >= np.maximum(a, b), np.minimum(a, b), np.where(c <= np.minimum(a, b), np.maximum(a, b), a + b - c)
    )


def med_agent(tr: PixelData, te: PixelData, temp=1.0, levels=K):
    """Median edge detector (LOCO-I / JPEG-LS) + Laplace residual whose scale depends on activity."""
    resid = tr.y - _med(tr.x)
    c = _scale_model(tr.x, resid, "laplace")
    s = np.maximum(c[0] + c[1] * _activity(te.x), 0.3 * _unit(levels))
    return _residual_logp(_med(te.x), s * temp, "laplace", levels)


def histogram_agent(tr: PixelData, te: PixelData, feats, bins=64, alpha=0.5, levels=K):
    """Counts of the grey level in each context (the quantised features), add-alpha smoothed."""
    q = lambda x: np.minimum((x[:, feats] * bins / levels).astype(np.int64), bins - 1)  # noqa: E731
    mult = bins ** np.arange(len(feats))
    ctx_tr, ctx_te = q(tr.x) @ mult, q(te.x) @ mult
    n_ctx = bins ** len(feats)
    counts = np.zeros((n_ctx, levels))
    np.add.at(counts, (ctx_tr, tr.y), 1.0)
    prior = np.bincount(tr.y, minlength=levels) + 1.0
    prior /= prior.sum()
    tab = counts + alpha * levels * prior[None, :]
    return _norm(np.log(tab[ctx_te]))


def knn_agent(tr: PixelData, te: PixelData, feats, k=40, bandwidth=1.0, levels=K):
    """Histogram of the k nearest training patches' grey levels, smoothed by a Gaussian kernel
    (``bandwidth`` in 64-level grey levels)."""
    from sklearn.neighbors import KNeighborsRegressor

    nn = KNeighborsRegressor(n_neighbors=k).fit(tr.x[:, feats], tr.y)
    idx = nn.kneighbors(te.x[:, feats], return_distance=False)
    ny = tr.y[idx]  # (n, k)
    lev = _levels(levels)
    kern = np.exp(-0.5 * ((lev[None, None, :] - ny[:, :, None]) / (bandwidth * _unit(levels))) ** 2).sum(1)
    p = kern / kern.sum(1, keepdims=True)
    return np.log(0.98 * p + 0.02 / levels)


def marginal_agent(tr: PixelData, te: PixelData, levels=K):
    p = np.bincount(tr.y, minlength=levels) + 1.0
    return np.tile(np.log(p / p.sum()), (len(te), 1))


def _subset(tr: PixelData, mask) -> PixelData:
    return PixelData(tr.x[mask], tr.y[mask], tr.img[mask])


def build_agents(tr: PixelData, te: PixelData, seed: int = 0, levels: int = K) -> list[tuple[str, str, np.ndarray]]:
    """The demo field: ``(participant, description, unnormalised log-probs (n_test, levels))``."""
    rng = np.random.default_rng(seed)
    frac = lambda f: _subset(tr, rng.random(len(tr)) < f)  # noqa: E731
    dark = _subset(tr, tr.y < 24 * _unit(levels))
    one_img = lambda j: _subset(tr, tr.img == j)  # noqa: E731
    n_img = int(tr.img.max()) + 1
    A = []
    add = lambda who, what, lp: A.append((who, what, lp))  # noqa: E731
    add("ada", "linear, 4 neighbours, adaptive Laplace", linear_agent(tr, te, FEATURES["four"], levels=levels))
    add("ada", "linear, whole patch, adaptive Laplace", linear_agent(tr, te, FEATURES["patch"], levels=levels))
    add(
        "ada",
        "linear, whole patch, adaptive Gaussian",
        linear_agent(tr, te, FEATURES["patch"], kind="gauss", levels=levels),
    )
    add("bruno", "median edge detector + Laplace", med_agent(tr, te, levels=levels))
    add("bruno", "median edge detector, overconfident", med_agent(tr, te, temp=0.6, levels=levels))
    add("chen", "left pixel only, Laplace", linear_agent(tr, te, FEATURES["left"], levels=levels))
    add("chen", "above pixel only, Laplace", linear_agent(tr, te, FEATURES["above"], levels=levels))
    add("dara", "histogram given (left, above), 16 bins", histogram_agent(tr, te, [W_, N_], bins=16, levels=levels))
    add("dara", "histogram given left pixel", histogram_agent(tr, te, [W_], bins=64, levels=levels))
    add(
        "dara",
        "histogram given (left, above, up-right), 8 bins",
        histogram_agent(frac(0.5), te, [W_, N_, NE_], bins=8, levels=levels),
    )
    add("eli", "40 nearest neighbours on 4 neighbours", knn_agent(frac(0.3), te, FEATURES["four"], levels=levels))
    add(
        "eli",
        "15 nearest neighbours on 6 neighbours",
        knn_agent(frac(0.3), te, FEATURES["six"], k=15, bandwidth=1.5, levels=levels),
    )
    add("fatou", "linear on 6 neighbours, 10% of the data", linear_agent(frac(0.1), te, FEATURES["six"], levels=levels))
    add(
        "fatou",
        "linear on 6 neighbours, fixed Gaussian",
        linear_agent(tr, te, FEATURES["six"], kind="gauss", adaptive=False, levels=levels),
    )
    add("gus", "trained on dark pixels only (biased)", linear_agent(dark, te, FEATURES["four"], levels=levels))
    add("gus", "trained on one image only (biased)", linear_agent(one_img(0), te, FEATURES["four"], levels=levels))
    add(
        "hana",
        "linear, 4 neighbours, one level too bright (biased)",
        linear_agent(tr, te, FEATURES["four"], shift=1.0, levels=levels),
    )
    add("hana", "linear, 4 neighbours, underconfident", linear_agent(tr, te, FEATURES["four"], temp=2.0, levels=levels))
    add("ivo", "global grey-level histogram", marginal_agent(tr, te, levels=levels))
    add(
        "ivo",
        "linear on the whole patch, images 2-5 only",
        linear_agent(_subset(tr, (tr.img >= 2) & (tr.img <= 5)), te, FEATURES["patch"], levels=levels),
    )
    add("jun", "median edge detector, fixed scale", _residual_logp_med_fixed(tr, te, levels=levels))
    add(
        "jun",
        f"linear, 4 neighbours, image {n_img - 1} only (biased)",
        linear_agent(one_img(n_img - 1), te, FEATURES["four"], levels=levels),
    )
    return A


def _residual_logp_med_fixed(tr, te, levels=K):
    b = max(np.abs(tr.y - _med(tr.x)).mean(), 0.3 * _unit(levels))
    return _residual_logp(_med(te.x), np.full(len(te), b), "laplace", levels)


CACHE_VERSION = 2


def make_demo_data(
    n_train: int = 30000,
    n_test: int = 4000,
    seed: int = 2026,
    cache_dir: str | None = None,
    *,
    secret: int,
    levels: int = K,
):
    """Training pixels, test pixels and the agents' predictions on the test pixels, over ``levels`` grey
    levels (module docstring; the demo's 64 by default).

    Training pixels come from copies of the images warped from ``seed`` (public), test pixels from
    copies warped from ``secret`` (:func:`warp_image`), which the caller keeps hidden. With
    ``cache_dir`` the result is kept in ``<cache_dir>/pixels-<...>.npz`` (named by a digest of the
    secret, not the secret) and read back next time.
    """
    path = None
    if cache_dir:
        tag = hashlib.sha256(f"{secret}".encode()).hexdigest()[:16]
        lv = "" if levels == K else f"-L{levels}"
        path = os.path.join(cache_dir, f"pixels-v{CACHE_VERSION}-{n_train}-{n_test}-{seed}{lv}-{tag}.npz")
        if os.path.isfile(path):
            try:
                with np.load(path, allow_pickle=False) as z:
                    tr = PixelData(z["tr_x"], z["tr_y"], z["tr_img"])
                    te = PixelData(z["te_x"], z["te_y"], z["te_img"])
                    agents = [(str(w), str(d), z[f"agent_{i}"]) for i, (w, d) in enumerate(zip(z["who"], z["what"]))]
                return tr, te, agents
            except Exception:  # noqa: BLE001 - a broken cache is rebuilt
                pass
    rng = np.random.default_rng(seed)
    hidden = np.random.default_rng(np.random.SeedSequence([int(secret), int(seed), 0xDE30]))
    images = load_images(levels)
    tr = sample_pixels([warp_image(im, rng, levels) for im in images], n_train, rng)
    te = sample_pixels([warp_image(im, hidden, levels) for im in images], n_test, hidden)
    agents = build_agents(tr, te, seed, levels)
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp.npz"
        arrays: dict[str, np.ndarray] = {
            "tr_x": tr.x.astype(np.uint8),
            "tr_y": tr.y,
            "tr_img": tr.img,
            "te_x": te.x.astype(np.uint8),
            "te_y": te.y,
            "te_img": te.img,
            "who": np.array([a[0] for a in agents]),
            "what": np.array([a[1] for a in agents]),
        }
        arrays.update({f"agent_{i}": a[2].astype(np.float32) for i, a in enumerate(agents)})
        np.savez(tmp, **arrays)  # type: ignore[arg-type]  # (numpy stubs read ** as allow_pickle)
        os.replace(tmp, path)
    return tr, te, agents
