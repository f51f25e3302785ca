"""The registry of the numbers the book's prose quotes from the papers and from the authors' code.

In a chapter's markdown a number of *ours* is glued from an executed cell; a number quoted
from a paper is written ``{paper}`98.66%``` and one taken from the authors' code
``{repo}`2e-4``` (``book/_ext/paper_role.py`` renders both as plain text).
``scripts/check_prose.py`` accepts a value inside either role only when it is registered
here, so every quoted number has a source one can check:

* a :class:`PaperFact` is a value as the chapters write it (``"1,000"``, ``"98.66%"``), the
  paper (a key of :data:`symlib.experiments.report.manifest.PAPERS`), the section, and a short
  verbatim quote of the paper text (``../shared/papers``) that contains the value;
  :func:`quote_problems` checks the quote against the text, and the tests run it on every fact;
* a :class:`RepoFact` is a value from the authors' public code (or a library the paper
  names as the one it used): the repository, the file, the commit of the version read, the
  line(s) of code that hold the value, and the fact in words. The code is not shipped with
  the book, so only the value is checked against the quoted line(s)
  (:func:`value_in_code`).

A number that is neither in a paper's text nor in the authors' code (a ratio we computed
from two paper numbers, a setting of ours) is not registered: the prose says it without a
digit, names the two paper values, or glues it.

Matching is on a normalised text (:func:`normalise`): whitespace collapsed, thousands
separators dropped (``1,000`` = ``1000``), no space before ``%``, the unicode minus and
times signs as ``-`` and ``x``, and the number words *zero* to *ten* and *twenty* as digits
(the papers write "two hidden neurons", "padding four", "the twenty MMD kernels"). A value
is found in a text when its normalised form appears with no digit, decimal point or
decimal digits glued to either side, so ``10`` is not found in ``100`` or ``1.0``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PaperFact", "RepoFact", "PAPER_FACTS", "REPO_FACTS", "PAPERS_DIR", "lookup", "paper_values",
           "repo_values", "normalise", "value_in_text", "value_in_code", "paper_text", "quote_problems",
           "registry_problems"]

#: where the paper texts live: ``../shared/papers`` next to the repository (not shipped with it)
PAPERS_DIR = Path(__file__).resolve().parents[4] / "shared" / "papers"


@dataclass(frozen=True)
class PaperFact:
    """A number (or setting) of a paper, as the chapters quote it.

    Attributes:
        value: the text inside the ``{paper}`` role, exactly as the chapters write it.
        paper: a key of :data:`symlib.experiments.report.manifest.PAPERS`.
        section: where in the paper (``"App. A"``, ``"Sec. 4, Table 1"``).
        quote: a short verbatim span of the paper text (whitespace-normalised) that
            contains the value.
    """

    value: str
    paper: str
    section: str
    quote: str


@dataclass(frozen=True)
class RepoFact:
    """A number from the authors' code (or a library the paper says it used).

    Attributes:
        value: the text inside the ``{repo}`` role, exactly as the chapters write it.
        repo: the GitHub repository, ``owner/name``.
        path: the file in that repository.
        commit: the commit of the version the fact was read from.
        code: the line(s) of that file holding the value, verbatim.
        fact: the fact in words.
    """

    value: str
    repo: str
    path: str
    commit: str
    code: str
    fact: str


def _p(value: str, paper: str, section: str, quote: str) -> PaperFact:
    return PaperFact(value, paper, section, quote)


_MNIST_MLP_COLUMN = "False 500 1.0 128 1 0.01 512 0.01 0.0000001 1000"   # Rossi et al., App. B, Table 1
_RESNET20_COLUMN = "False 500 1.0 128 1 0.01 16 0.01 0.000001"             # its first column: CIFAR10, ResNet20
_CIFAR10_MLP_COLUMN = "False 500 1.0 128 1 0.01 512 0.0025 0.000001"        # its middle column: CIFAR10, MLP
_TOY_RECIPE = "trained 10,000 two-layer perceptrons with two input, two hidden, and one output neurons"
#: Table 1's MNIST row of SGHMC: MMD, NS, Acc, ECE, Brier, AUPR, FPR95, ID MI, OOD MI
_SGHMC_MNIST_ROW = "SGHMC | 16.7 | 17.7 | 95.1 | 7.6 | 2.8 | 73.7 | 98.4 | 4.3 | 14.5"

#: every value the chapters quote from a paper, with its quote
PAPER_FACTS: tuple[PaperFact, ...] = (
    # Xiao et al. (2023)
    _p("512", "xiao2023", "Sec. 2", "a total of 512 hidden activations that can be permuted"),
    _p("512", "xiao2023", "Sec. 3", "a single hidden layer of size 512"),
    _p("0", "xiao2023", "Sec. 2", "ranging over all values from zero to 511"),
    _p("511", "xiao2023", "Sec. 2", "ranging over all values from zero to 511"),
    _p("5", "xiao2023", "Sec. 2, Fig. 2", "shaded regions: $\\pm 1\\sigma$ over 5 runs"),
    _p("5", "xiao2023", "App. A", "we use 5 randomly initialized members"),
    _p("50", "xiao2023", "App. A", "trained with Adam for 50 epochs"),
    _p("100", "xiao2023", "App. A", "we use 100 samples in Monte Carlo integration"),
    _p("600", "xiao2023", "App. A", "we use 600 epochs for burn-in"),
    _p("10", "xiao2023", "App. A", "then we save a sample for every 10 epochs"),
    _p("500", "xiao2023", "App. A", "Each epoch uses 500 leapfrog steps"),
    _p("1,000", "xiao2023", "App. A", "we generated 1000 HMC samples"),
    _p("0.1212", "xiao2023", "Sec. 3.1, Table 1",
       "Agreement with HMC samples 1. 0.1212 0.8249 0.9931 0.5239 0.9868 0.9885"),
    _p("0.8249", "xiao2023", "Sec. 3.1, Table 1",
       "Agreement with HMC samples 1. 0.1212 0.8249 0.9931 0.5239 0.9868 0.9885"),
    _p("0.5239", "xiao2023", "Sec. 3.1, Table 1",
       "Agreement with HMC samples 1. 0.1212 0.8249 0.9931 0.5239 0.9868 0.9885"),
    _p("0.9868", "xiao2023", "Sec. 3.1, Table 1",
       "Agreement with HMC samples 1. 0.1212 0.8249 0.9931 0.5239 0.9868 0.9885"),
    _p("98.66%", "xiao2023", "Sec. 3.1, Table 1", "Test Accuracy (%) of Samples 98.43 11.11 82.34 98.66"),
    # Rossi et al. (2023); App. B, Table 1 is column-scrambled in the text: the MNIST MLP column
    _p("500", "rossi2023", "App. B, Table 1 (batch size)", _MNIST_MLP_COLUMN),
    _p("1.0", "rossi2023", "App. B, Table 1 (temperature)", _MNIST_MLP_COLUMN),
    _p("128", "rossi2023", "App. B, Table 1 (test samples)", _MNIST_MLP_COLUMN),
    _p("0.01", "rossi2023", "App. B, Table 1 (VI std. init, prior variance)", _MNIST_MLP_COLUMN),
    _p("512", "rossi2023", "App. B, Table 1 (base features)", _MNIST_MLP_COLUMN),
    _p("0.0000001", "rossi2023", "App. B, Table 1 (learning rate)", _MNIST_MLP_COLUMN),
    _p("1,000", "rossi2023", "App. B, Table 1 (train epochs)", _MNIST_MLP_COLUMN),
    _p("500", "rossi2023", "App. B, Table 1 (ResNet20 batch size)", _RESNET20_COLUMN),
    _p("128", "rossi2023", "App. B, Table 1 (ResNet20 test samples)", _RESNET20_COLUMN),
    _p("0.0025", "rossi2023", "App. B, Table 1 (CIFAR-10 MLP prior variance)", _CIFAR10_MLP_COLUMN),
    _p("512", "rossi2023", "App. B, Table 2", "512 \\times 512 \\\\ 512 \\times 512"),
    _p("8", "rossi2023", "App. B.1", "with 8 NVIDIA A100 GPUs"),
    # Laurent et al. (2024)
    _p("10,000", "laurent2024", "Sec. 3.1", "the posterior of the output weights with 10,000 checkpoints"),
    _p("10,000", "laurent2024", "App. A.1", _TOY_RECIPE),
    _p("2", "laurent2024", "App. A.1", _TOY_RECIPE),
    _p("1", "laurent2024", "App. A.1", _TOY_RECIPE),
    _p("10", "laurent2024", "App. A.1", "with early stopping for 10 epochs with SGD"),
    _p("10", "laurent2024", "App. A.1", "We used a batch size of 10 data"),
    _p("2", "laurent2024", "App. A.1", "a learning rate of 2"),
    _p("1%", "laurent2024", "App. A.1", "removing the few outliers (less than 1%)"),
    _p("3", "laurent2024", "App. A.2", "We chose 3 as norm for visual purposes"),
    _p("392", "laurent2024", "Sec. 4", "with our OptuNet (392 parameters)"),
    _p("10", "laurent2024", "Sec. 4", "the application of these methods on 10 different independently trained models"),
    _p("1,000", "laurent2024", "Sec. 4", "We estimate the target distribution with 1000 checkpoints"),
    _p("100", "laurent2024", "Sec. 4", "compare it to 100 samples extracted from each"),
    _p("20", "laurent2024", "Sec. 4.1", "the median over the twenty MMD kernels"),
    _p("60", "laurent2024", "App. B.1", "We train OptuNet for 60 epochs with batches of size 64"),
    _p("64", "laurent2024", "App. B.1", "We train OptuNet for 60 epochs with batches of size 64"),
    _p("0.04", "laurent2024", "App. B.1", "with a start learning rate of 0.04"),
    _p("20", "laurent2024", "App. B.1", "perform SWAG using 20 different models"),
    _p("28", "laurent2024", "App. B.1", "perform a random crop of size 28 and padding four"),
    _p("4", "laurent2024", "App. B.1", "perform a random crop of size 28 and padding four"),
    _p("60,000", "laurent2024", "App. B.3.1", "a training set with 60,000 samples"),
    _p("15.0", "laurent2024", "Sec. 4, Table 1", "Dropout | 15.0 | 14.3 | 83.3"),
    _p("16.0", "laurent2024", "Sec. 4, Table 1", "SWAG | 16.0 | 14.6 | 88.3"),
    _p("18.8", "laurent2024", "Sec. 4, Table 1", "BNN | 18.8 | 17.1 | 78.1"),
    _p("10.6", "laurent2024", "Sec. 4, Table 1", "Laplace | 10.6 | 9.5 | 87.9"),
    _p("9.5", "laurent2024", "Sec. 4, Table 1", "Laplace | 10.6 | 9.5 | 87.9"),
    _p("2.8", "laurent2024", "Sec. 4, Table 1", "BNN | 2.8 | 2.5 | 86.5"),
    _p("2.5", "laurent2024", "Sec. 4, Table 1", "BNN | 2.8 | 2.5 | 86.5"),
    _p("2.8", "laurent2024", "Sec. 4, Table 1", _SGHMC_MNIST_ROW),
    _p("95.1", "laurent2024", "Sec. 4, Table 1", _SGHMC_MNIST_ROW),
    _p("7.6", "laurent2024", "Sec. 4, Table 1", _SGHMC_MNIST_ROW),
    _p("4.3", "laurent2024", "Sec. 4, Table 1", _SGHMC_MNIST_ROW),
    _p("14.5", "laurent2024", "Sec. 4, Table 1", _SGHMC_MNIST_ROW),
    _p("3.9", "laurent2024", "Sec. 4, Table 1", "SWAG | 9.1 | 3.9 | 61.7"),
    _p("5.4", "laurent2024", "Sec. 4, Table 1", "SWAG | 6.7 | 5.4 | 64.8"),
    _p("0.0", "laurent2024", "Sec. 4, Table 1", "DE | 0.0 | 0.0 | 95.3 | 10.7 | 13.5"),
    _p("13.5", "laurent2024", "Sec. 4, Table 1", "DE | 0.0 | 0.0 | 95.3 | 10.7 | 13.5"),
    _p("10.2", "laurent2024", "Sec. 4, Table 1", "BNN | 9.0 | 10.2 | 57.6"),
    _p("14.9", "laurent2024", "App. B.4", "Dropout | 14.9 | 14.6 | 22.9"),
    _p("15.9", "laurent2024", "App. B.4", "SWAG | 15.9 | 15.8 | 25.9"),
    _p("7.5", "laurent2024", "Sec. 4, Table 1", "One Mode | Dropout | 4.5 | 7.5 | 69.3"),
    _p("4.5", "laurent2024", "Sec. 4, Table 1", "Multi Mode | Dropout | 0.7 | 4.5 | 75.5"),
    _p("0.5", "laurent2024", "Sec. 4, Table 1", "Laplace | 0.5 | 3.1 | 34.4"),
    _p("0.6", "laurent2024", "App. B.4", "Laplace | 0.6 | 0.6 | 9.9"),
)

_OPTUNET = ("ENSTA-U2IS-AI/optuMNIST", "optumnist/optumnist-v1.py", "4a381b8b55185665ae73fbca926429151331ad51")
_CONV1 = "self.conv1 = nn.Conv2d(in_channels=1, out_channels=2, kernel_size=4, stride=1, bias=False)"
_CONV2 = "self.conv2 = nn.Conv2d(in_channels=2, out_channels=10, kernel_size=5, groups=2, stride=1, bias=False)"
_FC1 = "self.fc1 = nn.Linear(in_features=10, out_features=3, bias=True)"
_FC2 = "self.fc2 = nn.Linear(in_features=3, out_features=10, bias=True)"
#: the MNIST script of the SGHMC library Laurent et al. used (J. Antorán's Bayesian-Neural-Networks)
_SGHMC_SCRIPT = ("JavierAntoran/Bayesian-Neural-Networks", "train_SGHMC_MNIST.py",
                 "73f4dcee795078cdb3488fd06680a9fbe7a4e9a1")
_MNIST_DM = ("ENSTA-U2IS-AI/torch-uncertainty", "torch_uncertainty/datamodules/mnist.py",
             "0068ab5cb5a1fc630902fad7ed83bc8d2005df9e")
_NORMALIZE = "T.Normalize((0.1307,), (0.3081,))"


def _r(source: tuple[str, str, str], value: str, code: str, fact: str) -> RepoFact:
    return RepoFact(value, *source, code=code, fact=fact)


#: every value the chapters take from the authors' code
REPO_FACTS: tuple[RepoFact, ...] = (
    # OptuNet's architecture and recipe: the optuMNIST code (Laurent et al.'s App. B.2 gives no layer sizes)
    _r(_OPTUNET, "4x4", _CONV1, "OptuNet's first convolution has a 4x4 kernel, 1 input and 2 output channels, no bias"),
    _r(_OPTUNET, "2", _CONV1, "OptuNet's first convolution has 2 output channels"),
    _r(_OPTUNET, "3x3", "self.pool1 = nn.MaxPool2d(kernel_size=3, stride=3)",
       "a 3x3 max-pool with stride 3 follows the first convolution"),
    _r(_OPTUNET, "5x5", _CONV2, "the second convolution has a 5x5 kernel, 2 groups, 10 output channels, no bias"),
    _r(_OPTUNET, "10", _CONV2, "the second convolution has 10 output channels"),
    _r(_OPTUNET, "2", _CONV2, "the second convolution has 2 groups"),
    _r(_OPTUNET, "3", _FC1, "the hidden dense layer has 3 units (with bias), after a global average pool"),
    _r(_OPTUNET, "10", _FC2, "the output layer maps the 3 hidden units to the 10 classes"),
    _r(_OPTUNET, "2e-4", "optimizer = optim.SGD(model.parameters(), lr=0.04, weight_decay=0.0002)",
       "SGD with weight decay 2e-4 (the value lost from the paper's extracted App. B.1)"),
    _r(_OPTUNET, "15%", 'NonConvergence(monitor="hp/val_acc", mode="max", divergence_threshold=0.15)',
       "a run whose validation accuracy is below 15% is stopped (see optumnist/utils.py for when)"),
    _r(("ENSTA-U2IS-AI/optuMNIST", "optumnist/utils.py", "2b287160ae7445842bff2a3d05101a8ee56cd749"), "3",
       "if trainer.current_epoch >= 3: should_stop, reason = self._evaluate_stopping_criteria(current)",
       "the non-convergence check (accuracy below the threshold stops the run) starts at epoch 3"),
    _r(("ENSTA-U2IS-AI/optuMNIST", "README.md", "499e3dfce37c380e6a33c7c6db30b8440333c6b4"), "75%",
       "75% to 85% accuracy on MNIST with 355 parameters.", "the repository states 75% to 85% MNIST accuracy"),
    _r(("ENSTA-U2IS-AI/optuMNIST", "README.md", "499e3dfce37c380e6a33c7c6db30b8440333c6b4"), "85%",
       "75% to 85% accuracy on MNIST with 355 parameters.", "the repository states 75% to 85% MNIST accuracy"),
    # the MNIST loader of the authors' torch-uncertainty library, which optumnist-v1.py uses
    _r(_MNIST_DM, "0.1307", _NORMALIZE, "MNIST pixels are standardised with mean 0.1307 and standard deviation 0.3081"),
    _r(_MNIST_DM, "0.3081", _NORMALIZE, "MNIST pixels are standardised with mean 0.1307 and standard deviation 0.3081"),
    # the calibration error of torch-uncertainty (a later version, metrics/calibration.py, defaults to 10 bins)
    _r(("ENSTA-U2IS-AI/torch-uncertainty", "torch_uncertainty/metrics/calibration_error.py",
        "72e5cb8c88f91556a98a0f65ea8d55127fba9b86"), "15",
       'def __new__(cls, task: Literal["binary", "multiclass"], n_bins: int = 15, norm: Literal["l1", "l2", "max"] = "l1"',
       "the top-label calibration error uses 15 equal-width bins and the L1 norm by default"),
    # the authors' MMD (a port of Schrab et al.'s MMDAgg)
    _r(("o-laurent/bayes_posterior_symmetry_exploration", "mmd/mmd_torch.py",
        "a2244ccd361253092ee640bffcaf66e0d0ca3388"), "10",
       'kernel: str = "laplace_gaussian", number_bandwidths: int = 10,',
       "10 bandwidths for each of the Laplace and the Gaussian kernel: 20 kernels"),
    _r(("o-laurent/bayes_posterior_symmetry_exploration", "mmd/mmd_torch.py",
        "a2244ccd361253092ee640bffcaf66e0d0ca3388"), "500", "max_samples = 500",
       "the bandwidths come from the distances between the first 500 points of one sample and the first 500 "
       "of the other (compute_l2_two_distance(X[:max_samples], Y[:max_samples]))"),
    # SGHMC: "the GitHub repository Bayesian-Neural-Networks" (Laurent et al., Sec. 7), a library the authors used
    _r(_SGHMC_SCRIPT,
       "1e-2", "parser.add_argument('--lr', type=float, nargs='?', action='store', default=1e-2,",
       "the scale-adapted SGHMC sampler (H_SA_SGHMC) runs at learning rate 1e-2 by default"),
    _r(_SGHMC_SCRIPT,
       "50", "resample_its = 50",
       "one sampler update a minibatch, the momentum resampled every 50 minibatches"),
    _r(_SGHMC_SCRIPT,
       "250", "parser.add_argument('--epochs', type=int, nargs='?', action='store', default=250,",
       "the MNIST script samples for 250 epochs by default"),
    _r(_SGHMC_SCRIPT,
       "20", "parser.add_argument('--burn_in', type=int, nargs='?', action='store', default=20,",
       "the MNIST script adapts the sampler's scales (its burn-in) for its first 20 epochs by default"),
    _r(_SGHMC_SCRIPT,
       "15", "resample_prior_its = 15",
       "the prior's precision is Gibbs-resampled every 15 minibatches"),
    _r(_SGHMC_SCRIPT,
       "2", "parser.add_argument('--sample_freq', type=int, nargs='?', action='store', default=2,",
       "after the burn-in a draw is saved every 2 epochs by default"),
    _r(("JavierAntoran/Bayesian-Neural-Networks", "src/Stochastic_Gradient_HMC_SA/optimizers.py",
        "49a02f188ba08d1069f33859f5caf0be6622f3cd"), "10",
       "def __init__(self, params, lr=1e-2, base_C=0.05, gauss_sig=0.1, alpha0=10, beta0=10):",
       "the Gamma hyper-prior on the prior precision has shape alpha0 = 10 and rate beta0 = 10"),
)


def lookup(value: str, kind: str | None = None) -> tuple[PaperFact | RepoFact, ...]:
    """The registered facts of one value, exactly as the chapters write it.

    Args:
        value: the text inside the role (``"1,000"``, ``"98.66%"``).
        kind: ``"paper"`` (only :data:`PAPER_FACTS`), ``"repo"`` (only :data:`REPO_FACTS`) or
            ``None`` (both).

    Returns:
        The matching facts, paper facts first; empty when the value is not registered.
    """
    if kind not in (None, "paper", "repo"):
        raise ValueError(f"kind is 'paper', 'repo' or None, got {kind!r}")
    found: list[PaperFact | RepoFact] = []
    if kind in (None, "paper"):
        found += [f for f in PAPER_FACTS if f.value == value]
    if kind in (None, "repo"):
        found += [f for f in REPO_FACTS if f.value == value]
    return tuple(found)


def paper_values() -> frozenset[str]:
    """Every value registered as a paper's (what ``{paper}`...``` may hold)."""
    return frozenset(f.value for f in PAPER_FACTS)


def repo_values() -> frozenset[str]:
    """Every value registered as the authors' code's (what ``{repo}`...``` may hold)."""
    return frozenset(f.value for f in REPO_FACTS)


_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
          "eight": "8", "nine": "9", "ten": "10", "twenty": "20"}
_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.I)


def normalise(text: str) -> str:
    """``text`` with the harmless formatting differences between the chapters and the paper
    texts removed (see the module docstring)."""
    text = text.replace("\u2212", "-").replace("\u2013", "-").replace("\u00d7", "x").replace("\u00a0", " ")
    text = _WORD.sub(lambda m: _WORDS[m.group(1).lower()], text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    text = re.sub(r"\s+", " ", text)
    return re.sub(r"\s+%", "%", text).strip()


def value_in_text(value: str, text: str) -> bool:
    """Whether ``value`` occurs in ``text``, both normalised, with no digit or decimal part
    glued to it (``10`` is not in ``100``, ``1.0`` or ``0.10``); a value ending in ``%`` is
    also found without the sign (a table whose header says "(%)")."""
    text = normalise(text)
    candidates = {normalise(value)}
    candidates |= {c[:-1] for c in candidates if c.endswith("%")}
    return any(re.search(rf"(?<![\d.]){re.escape(c)}(?![\d]|\.\d)", text) for c in candidates if c)


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?", re.I)


def _numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(normalise(text).replace("x", " "))]


def value_in_code(fact: RepoFact) -> bool:
    """Whether every number of the fact's value is a number of its quoted code (a
    percentage also as a fraction: ``15%`` is ``0.15``; ``2e-4`` is ``0.0002``)."""
    in_code = _numbers(fact.code)
    wanted = _numbers(fact.value)
    scale = (1.0, 0.01) if fact.value.strip().endswith("%") else (1.0,)
    return bool(wanted) and all(any(abs(w * s - c) <= 1e-12 * max(1.0, abs(c)) for s in scale for c in in_code)
                                for w in wanted)


def paper_files(paper: str) -> tuple[str, ...]:
    """The text files of ``paper`` in the papers folder (from the manifest's :data:`PAPERS`)."""
    from symlib.experiments.report.manifest import PAPERS
    return PAPERS[paper][2]


def paper_text(paper: str, papers_dir: Path | str | None = None) -> str:
    """The normalised text of ``paper``: all of its files, joined.

    Raises:
        FileNotFoundError: when the papers folder (default :data:`PAPERS_DIR`) or a file is absent.
    """
    folder = Path(papers_dir) if papers_dir is not None else PAPERS_DIR
    if not folder.is_dir():
        raise FileNotFoundError(f"the paper texts are not there ({folder}, next to the repository)")
    return normalise(" ".join((folder / name).read_text(encoding="utf-8") for name in paper_files(paper)))


def quote_problems(fact: PaperFact, papers_dir: Path | str | None = None) -> list[str]:
    """What is wrong with one paper fact: a quote not found in its paper's text, or a quote
    without the value. Empty when the fact checks out.

    Raises:
        FileNotFoundError: when the paper texts are absent (the caller skips).
    """
    problems = []
    if not value_in_text(fact.value, fact.quote):
        problems.append(f"{fact.paper} ({fact.section}): the quote {fact.quote!r} does not contain {fact.value!r}")
    if normalise(fact.quote) not in paper_text(fact.paper, papers_dir):
        problems.append(f"{fact.paper} ({fact.section}): the quote {fact.quote!r} is not in the paper's text")
    return problems


def registry_problems(papers_dir: Path | str | None = None) -> list[str]:
    """Every problem of the registry: each paper fact's quote (:func:`quote_problems`) and
    each repo fact's value against its code (:func:`value_in_code`).

    Raises:
        FileNotFoundError: when the paper texts are absent (the caller skips).
    """
    problems = [p for fact in PAPER_FACTS for p in quote_problems(fact, papers_dir)]
    problems += [f"{f.repo}/{f.path}: {f.value!r} is not a number of {f.code!r}"
                 for f in REPO_FACTS if not value_in_code(f)]
    return problems
