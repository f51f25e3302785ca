"""Run profiles: ``quick`` (laptop CPU, minutes) and ``paper`` (the papers' settings, GPU).

The active profile is chosen with the environment variable ``SYMLIB_PROFILE``
(default ``quick``). Every notebook prints it with :func:`describe`.
"""
from __future__ import annotations

import ast
import dataclasses
import os
import typing
from dataclasses import dataclass

ENV_VAR = "SYMLIB_PROFILE"
DEFAULT = "quick"


@dataclass(frozen=True)
class SharedProfile:
    """The data split and the MNIST MLP that the three papers' experiments share.

    Attributes:
        name: profile name.
        data_source: ``"subset"`` (the real MNIST / Fashion-MNIST subset shipped in the package) or
            ``"full"`` (the complete idx files; see :mod:`symlib.data`).
        n_train, n_val, n_test: examples drawn (deterministically) from the source.
        hidden: width of the hidden layer of the MNIST MLP (Xiao et al.: 512).
        epochs, batch_size, learning_rate: Adam/MAP training of MLPs.
        prior_std: std of the isotropic Gaussian prior (MAP = weight decay).
        n_lambdas: points on the interpolation path between two networks (barriers).
    """

    name: str
    description: str
    data_source: str
    n_train: int
    n_val: int
    n_test: int
    hidden: int
    epochs: int
    batch_size: int
    learning_rate: float
    prior_std: float
    n_lambdas: int


@dataclass(frozen=True)
class XiaoProfile(SharedProfile):
    """Sizes of Xiao et al.'s experiments (:mod:`symlib.experiments.xiao`), with the shared ones.

    Attributes:
        not_points: NoT values in the sweep of Xiao et al. Fig. 2 (0 = every value
            0 .. hidden-1); not_runs: random initialisations in that sweep, and independent
            (reference, permuted copy) pairs in ``not_paths``.
        rebasin_pairs: independent pairs of networks (seeds 2k and 2k + 1) whose barriers
            ``rebasin_barriers`` measures (Fig. 1 shows one pair; the claims are judged over pairs).
        hmc_*: full-batch HMC (Xiao et al. App. A: 500 leapfrog steps per iteration,
            600 burn-in iterations, one sample kept every 10 iterations, 1,000 samples);
            ``hmc_samples`` kept per chain, step size adapted during burn-in if ``hmc_adapt``.
            Chains start from independent initialisations, so each sits in its own
            permutation mode; the quick profile spends its budget on 9 short chains (5 samples
            each) rather than 2 long ones, so that the direct summary mixes modes. Its burn-in
            is 30 iterations, cut from 60 for the time budget (2026-11-29: chapter 04 7-15 s
            faster): the R-hat gate leaves every Table 1 and Fig. 3 claim of chapters 04
            and 05 "not tested" at either length, and q_d's fall with pooled chains (ours)
            holds at both (the chapter prints the effect).
        bnn_n_train: training examples (the first of the profile's training split) seen by
            every posterior approximation (HMC, VI, deep ensemble), so they can be compared.
        bnn_epochs: Adam epochs of the deep-ensemble members (paper: 50).
        vi_*: mean-field VI (Adam; the prior is the MAP prior N(0, prior_std^2)); ``vi_epochs``
            its epochs (paper: 50 over 50,000 examples, about 19,500 Adam steps at batch 128).
            The quick profile's 2,000 examples give 15 steps an epoch, so it runs 250 epochs at
            a larger learning rate (5e-3): with 40 epochs at 1e-3 (600 steps) Adam can move
            ``rho`` by at most about 0.6 and every sigma stayed near its 0.01 initial value.
        ensemble_members: deep-ensemble size; mc_samples: Monte-Carlo samples per predictive.
        xiao_replicates: independent runs of ``compact_representation`` (Table 1, Fig. 3), the
            units its claims are judged over: the HMC chains split into this many disjoint
            groups (each an independent HMC run of ``hmc_chains / xiao_replicates`` chains),
            and as many deep ensembles and VI fits, each with its own seed. One run leaves
            every such claim at most "same direction, not significant".
    """

    not_points: int
    not_runs: int
    rebasin_pairs: int
    bnn_n_train: int
    hmc_chains: int
    hmc_step_size: float
    hmc_adapt: bool
    hmc_leapfrog: int
    hmc_burnin: int
    hmc_samples: int
    hmc_thin: int
    bnn_epochs: int
    vi_epochs: int
    vi_batch_size: int
    vi_learning_rate: float
    vi_std_init: float
    ensemble_members: int
    mc_samples: int
    xiao_replicates: int


@dataclass(frozen=True)
class RossiProfile(SharedProfile):
    """Sizes of Rossi et al.'s experiments (:mod:`symlib.experiments.rossi`), with the shared ones.

    Attributes:
        align_*: Rossi et al.'s VI alignment experiments: MLPs with ``align_depth`` hidden
            layers of each width in ``align_widths`` (paper, Table 2: 3 x 512), mean-field VI
            with prior variance ``align_prior_var``, temperature 1, batch 500, std init 0.01
            (Table 1), ``align_epochs`` epochs; ``align_samples`` Monte-Carlo samples for the
            marginalised loss; ``align_n_eval`` examples of each split to evaluate it on;
            ``align_keep_posteriors`` keeps each pair's fitted posteriors in its cached step
            (``vi_alignment_timings`` aligns them; the GPU queue's ``rossi-1000epochs`` sets it
            false, since its steps travel to every later device call).
        resnet_*: Rossi et al.'s ResNet20 barriers (``vi_alignment_resnet20``): two VI fits of
            ResNet20 (LayerNorm) per width in ``resnet_widths`` on ``resnet_dataset``
            (paper: CIFAR-10; quick: Fashion-MNIST as a stand-in), ``resnet_n_train`` images,
            ``resnet_epochs`` epochs of batches of ``resnet_batch_size``, barriers on
            ``resnet_n_eval`` images of each split at ``resnet_n_lambdas`` points with
            ``resnet_samples`` Monte-Carlo samples each (paper, App. B, Table 1: 128 test
            samples); the prior variance and Adam learning rate of the MLP runs. The quick values are a smoke-size
            stand-in (a minute or two; the networks stay near chance), shown in chapter 07
            with the larger stand-ins we tried and why none of them can test the paper's
            claim on 2 CPU cores.
    """

    align_widths: tuple[int, ...]
    align_depth: int
    align_epochs: int
    align_prior_var: float
    align_samples: int
    align_n_eval: int
    align_pairs: int
    align_sweep_width: int
    align_n_train: int | None
    align_keep_posteriors: bool
    resnet_dataset: str
    resnet_widths: tuple[int, ...]
    resnet_n_train: int
    resnet_epochs: int
    resnet_batch_size: int
    resnet_n_eval: int
    resnet_n_lambdas: int
    resnet_samples: int


@dataclass(frozen=True)
class LaurentProfile(SharedProfile):
    """Sizes of Laurent et al.'s experiments (:mod:`symlib.experiments.laurent`), with the shared ones.

    Attributes:
        laurent_*: Laurent et al.'s trained checkpoints (Fig. 2, App. D.3, Sec. 5.2):
            ``laurent_nets`` ReLU MLPs 784-``laurent_hidden``-10 trained at once with their
            OptuNet recipe (App. B.1: SGD, learning rate 0.04 halved after a quarter and after
            half of the ``laurent_epochs`` epochs, batch 64, weight decay; the paper's value
            of the weight decay is lost from its text, ``laurent_weight_decay`` is ours).
            The quick profile trains 64 MLPs for 10 epochs (cut from 20 for the time budget:
            all ten claims of chapters 10 and 11 keep their verdicts, test accuracy 0.909
            instead of 0.922, measured 2026-11-28); not fewer networks: with 32 the App. D.3
            test ``marginals_differ_after`` is no longer significant.
        optunet_*: Laurent et al.'s own network: ``optunet_nets`` OptuNets trained at once
            with the authors' recipe (SGD 0.04, weight decay 2e-4, batch 64, random crops)
            for ``optunet_epochs`` epochs (paper: 60 on 60,000 images, about 56,000 steps).
            OptuNet learns slowly, so the quick profile spends its budget on steps, not
            networks: 3 networks x 70 epochs of the 9,000-image split (9,800 steps each;
            test accuracy 0.65-0.73), not 16 x 8 epochs (14% accuracy). It trained 100
            epochs (0.73-0.79, the authors' 75-85%) until 2026-11-29, when 70 were measured
            for the time budget (about 12 s less): all eight claims of chapters 10 and 11
            on these networks keep their verdicts at 50, 70 and 100 epochs. The two Sec. 5.2
            ratios (``swaps_in_high_lr_phases``, ``ordering_freezes``), which 50 epochs had
            turned to the opposite direction before the 5-run rule, are not tested with 3
            runs whichever way they point. 5 networks would judge them, at more cost than
            3 x 70 epochs (32 s): 5 x 50 epochs (38 s) left them "opposite direction, not
            significant" and the other six unchanged; 5 x 40 (35 s) also moved
            ``largest_weight`` (to differs) and ``swaps_scarce`` (to holds). They train in
            cached blocks of ``optunet_block`` networks (0: by JAX's backend, 32 on a CPU and
            256 on an accelerator, :func:`~symlib.experiments.laurent.optunet.optunet_block`);
            the GPU queue's ``laurent-fig2-1000`` fixes 256, so that its folded blocks are
            found here too. Network *i* is the same whatever the block size.
            ``optunet_used`` (0: all) keeps only the first ``optunet_used`` networks, whole
            blocks with the keys they have among the ``optunet_nets``: a labelled reduction
            that reads the blocks the GPU queue has trained so far.
        bank_*, post_*: Laurent et al. Sec. 4-5.1 (``optunet_bank``, ``laurent_posteriors``,
            ``functional_collapse``): ``bank_nets`` OptuNets trained at once for
            ``bank_epochs`` epochs with ``bank_recipe`` (``"laurent"``: the authors' recipe;
            ``"adam"``: Adam 1e-2 without crops, the quick profile's, since the authors'
            SGD recipe leaves most OptuNets below 25% accuracy after 10 epochs), in blocks of
            ``bank_block`` networks (each block one vmapped training, kept in the cache; on
            2 CPU cores blocks of 8 train 1.7x faster per network than blocks of 32, which
            fall out of the cache; a GPU wants large blocks). ``bank_used`` (0: all) keeps
            only the bank's first ``bank_used`` networks, whole blocks with the keys they have
            in the bank of ``bank_nets``: a labelled reduction that reads the blocks trained so
            far (the GPU queue's ``laurent-bank``, ``python -m symlib gpu install``).
            ``bank_more`` more networks continue the bank's key sequence (network
            ``bank_nets + i``, the same whatever ``bank_more``; left out with ``bank_used``),
            trained when too few of the bank's networks converged for the split: the paper
            profile's 1,120 gave 1,035 of the 1,100 it needs (2026-11-29, 92.4% converged),
            so 128 more (the GPU queue's ``laurent-bank-more``). The quick bank is 24 OptuNets of
            8 epochs (12 reference networks, 8 samples, 4 modes), cut from 32 for the time
            budget: chapter 13's verdicts are the same with 24 (all four, measured 2026-11-28),
            and chapter 12's are "not tested" at either size (the regime gate). Fewer epochs
            are no saving: at 6 the less trained networks make chapter 13's
            ``positive_correlation`` and ``ood_more_dispersed`` hold (r = 0.43), a regime the
            paper-scale reduction (r = 0.07) does not show. The first
            ``post_reference`` converged networks are the reference posterior, the next
            ``post_samples`` the deep ensemble; the first ``post_modes`` of those are the
            modes of the multi-mode methods. Every method gives ``post_samples`` samples
            (``post_samples / post_modes`` per mode); Dropout, BNN and SWAG train for
            ``post_method_epochs`` epochs and SGHMC's chain runs ``post_sghmc_epochs``, started
            from the modes when ``post_warm_start`` (else BNN and SGHMC from a fresh
            initialisation, Dropout from scratch for ``bank_epochs`` with the bank's recipe).
            SGHMC takes one gradient a minibatch: the paper profile's 250 epochs are the
            default of the MNIST script of the SGHMC library the authors used
            (``train_SGHMC_MNIST.py``; the paper gives no count), the quick profile's 5
            cost what its earlier sampler's one epoch of 5 integration steps a minibatch did.
            Laplace uses ``laplace_hessian``
            summed over ``laplace_n_data`` training images scaled to the whole set (None:
            all of them).
            Metrics on ``post_n_eval`` test images of MNIST and of Fashion-MNIST (OOD);
            ``collapse_pairs`` pairs of bank networks for Sec. 5.1 (0: all pairs).
        rn18_*: the same at ResNet-18 scale (:mod:`symlib.experiments.laurent.posteriors_resnet`,
            CIFAR-100 and TinyImageNet; GPU only, no chapter runs them in the quick profile,
            whose values are a smoke-test size): ResNet-18 with ``rn18_base_width`` channels
            in the first stage (64), trained on the first ``rn18_n_train`` training images
            (0: all) for ``rn18_epochs_cifar100`` / ``rn18_epochs_tiny_imagenet`` epochs
            (paper: 75 / 200), ``rn18_chunk`` networks at once; a bank of ``rn18_nets``:
            the first ``rn18_reference`` are the reference posterior (paper: 1,000), the
            next ``rn18_samples`` the deep ensemble; ``rn18_samples`` samples per method
            (100), ``rn18_modes`` modes for the multi-mode methods (10); batch-norm
            statistics re-estimated on ``rn18_bn_images`` training images (ours); metrics
            on ``rn18_n_eval`` test and OOD images (10,000); ``rn18_swap_nets`` networks
            whose sorted channels are followed through training (``rn18_swaps_cifar100``,
            Fig. 4 right; the paper does not say how many it averages).
    """

    laurent_nets: int
    laurent_hidden: tuple[int, ...]
    laurent_epochs: int
    laurent_batch_size: int
    laurent_learning_rate: float
    laurent_weight_decay: float
    optunet_nets: int
    optunet_epochs: int
    optunet_block: int
    optunet_used: int
    bank_nets: int
    bank_epochs: int
    bank_recipe: str
    bank_block: int
    bank_used: int
    bank_more: int
    post_reference: int
    post_samples: int
    post_modes: int
    post_method_epochs: int
    post_sghmc_epochs: int
    post_warm_start: bool
    laplace_hessian: str
    laplace_n_data: int | None
    post_n_eval: int
    collapse_pairs: int
    rn18_base_width: int
    rn18_n_train: int
    rn18_n_eval: int
    rn18_nets: int
    rn18_chunk: int
    rn18_swap_nets: int
    rn18_epochs_cifar100: int
    rn18_epochs_tiny_imagenet: int
    rn18_reference: int
    rn18_samples: int
    rn18_modes: int
    rn18_bn_images: int

#: each paper's profile class, by the name of its experiments' package
PAPER_PROFILES = {"xiao": XiaoProfile, "rossi": RossiProfile, "laurent": LaurentProfile}


@dataclass(frozen=True)
class Profile(LaurentProfile, RossiProfile, XiaoProfile):
    """The book's profile: the three papers' profiles composed, every field of each.

    The fields come in the order shared, Xiao, Rossi, Laurent (see :class:`SharedProfile`,
    :class:`XiaoProfile`, :class:`RossiProfile` and :class:`LaurentProfile` for what each
    means). A paper's experiments read only its own fields and the shared ones
    (``tests/experiments/test_config.py`` checks it); :meth:`paper` gives that part alone.
    """

    def paper(self, name: str) -> SharedProfile:
        """This profile's part for one paper: its fields and the shared ones.

        Args:
            name: ``"xiao"``, ``"rossi"`` or ``"laurent"``.

        Returns:
            The :class:`XiaoProfile`, :class:`RossiProfile` or :class:`LaurentProfile`.

        Raises:
            ValueError: for another name.
        """
        if name not in PAPER_PROFILES:
            raise ValueError(f"unknown paper {name!r}; papers: {', '.join(PAPER_PROFILES)}")
        cls = PAPER_PROFILES[name]
        return cls(**{f.name: getattr(self, f.name) for f in dataclasses.fields(cls)})

    def to_dict(self) -> dict:
        """The profile's fields.

        Returns:
            Field name -> value.
        """
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """One line with the profile and its key sizes, printed by every notebook.

        Returns:
            The line.
        """
        return (
            f"profile={self.name!r} ({self.description}); data={self.data_source} "
            f"n_train={self.n_train} n_val={self.n_val} n_test={self.n_test}; "
            f"MLP 784-{self.hidden}-10, {self.epochs} epochs, batch {self.batch_size}, "
            f"Adam lr {self.learning_rate}, prior std {self.prior_std}"
        )


PROFILES: dict[str, Profile] = {
    "quick": Profile(
        name="quick",
        description="2 CPU cores, minutes per notebook",
        data_source="subset",
        n_train=9_000,
        n_val=1_000,
        n_test=2_000,
        hidden=128,
        epochs=10,
        batch_size=128,
        learning_rate=1e-3,
        prior_std=1.0,
        n_lambdas=11,
        not_points=12,
        not_runs=3,
        rebasin_pairs=3,
        bnn_n_train=2_000,
        hmc_chains=9,  # 3 runs of 3 chains; xiao.agreement_by_chains (1, 3, 9 chains) reuses this run
        hmc_step_size=1e-3,
        hmc_adapt=True,
        hmc_leapfrog=20,
        hmc_burnin=30,
        hmc_samples=5,
        hmc_thin=2,
        bnn_epochs=40,
        vi_epochs=250,
        vi_batch_size=128,
        vi_learning_rate=5e-3,
        vi_std_init=0.01,
        ensemble_members=5,
        mc_samples=100,
        xiao_replicates=3,  # 3 disjoint groups of 3 of the 9 chains, 3 ensembles, 3 VI fits
        align_widths=(32, 64, 128),
        align_depth=3,
        align_epochs=20,
        align_prior_var=0.01,
        align_samples=8,
        align_n_eval=1_000,
        align_pairs=3,
        align_sweep_width=64,
        align_n_train=4_500,
        align_keep_posteriors=True,
        resnet_dataset="fashion_mnist",
        resnet_widths=(1,),
        resnet_n_train=256,
        resnet_epochs=2,
        resnet_batch_size=64,
        resnet_n_eval=64,
        resnet_n_lambdas=3,
        resnet_samples=2,
        laurent_nets=64,
        laurent_hidden=(32, 32),
        laurent_epochs=10,
        laurent_batch_size=64,
        laurent_learning_rate=0.04,
        laurent_weight_decay=5e-4,
        optunet_nets=3,
        optunet_epochs=70,
        optunet_block=0,
        optunet_used=0,
        bank_nets=24,
        bank_epochs=8,
        bank_recipe="adam",
        bank_block=8,
        bank_used=0,
        bank_more=0,
        post_reference=12,
        post_samples=8,
        # 1 epoch from the modes: chapter 12's time budget
        # on a slower machine (its claims are "not tested" at this scale: the regime gate)
        post_modes=4,
        post_method_epochs=1,
        post_sghmc_epochs=5,
        post_warm_start=True,
        laplace_hessian="ggn",
        laplace_n_data=2_000,
        post_n_eval=1_000,
        collapse_pairs=0,
        rn18_base_width=4,
        rn18_n_train=512,
        rn18_n_eval=256,
        rn18_nets=6,
        rn18_chunk=2,
        rn18_swap_nets=2,
        rn18_epochs_cifar100=1,
        rn18_epochs_tiny_imagenet=1,
        rn18_reference=3,
        rn18_samples=2,
        rn18_modes=2,
        rn18_bn_images=256,
    ),
    "paper": Profile(
        name="paper",
        description="the papers' settings, meant for a GPU",
        data_source="full",
        n_train=50_000,
        n_val=10_000,
        n_test=10_000,
        hidden=512,
        epochs=50,
        batch_size=128,
        learning_rate=1e-3,
        prior_std=1.0,
        n_lambdas=25,
        not_points=0,
        not_runs=5,
        rebasin_pairs=3,
        bnn_n_train=50_000,
        hmc_chains=10,
        hmc_step_size=1e-4,
        hmc_adapt=True,
        hmc_leapfrog=500,
        hmc_burnin=600,
        hmc_samples=100,
        hmc_thin=10,
        bnn_epochs=50,
        vi_epochs=50,
        vi_batch_size=128,
        vi_learning_rate=1e-3,
        vi_std_init=0.01,
        ensemble_members=5,
        mc_samples=100,
        xiao_replicates=1,  # one run of 10 chains, as the paper's one run (its claims capped at one run)
        align_widths=(128, 256, 512, 1024),
        align_depth=3,
        align_epochs=100,
        align_prior_var=0.01,
        align_samples=128,
        align_n_eval=10_000,
        align_pairs=3,
        align_sweep_width=512,
        align_n_train=None,
        align_keep_posteriors=True,
        resnet_dataset="cifar10",
        resnet_widths=(1, 2, 4, 8),
        resnet_n_train=50_000,
        resnet_epochs=100,
        resnet_batch_size=500,
        resnet_n_eval=10_000,
        resnet_n_lambdas=25,
        resnet_samples=128,
        laurent_nets=256,
        laurent_hidden=(128, 128),
        laurent_epochs=60,
        laurent_batch_size=64,
        laurent_learning_rate=0.04,
        laurent_weight_decay=5e-4,
        optunet_nets=256,
        optunet_epochs=60,
        optunet_block=0,
        optunet_used=0,
        bank_nets=1_120,
        bank_epochs=60,
        bank_recipe="laurent",
        bank_block=128,
        bank_used=0,
        bank_more=128,
        post_reference=1_000,
        post_samples=100,
        post_modes=10,
        post_method_epochs=60,
        post_sghmc_epochs=250,
        post_warm_start=False,
        laplace_hessian="full",
        laplace_n_data=None,
        post_n_eval=10_000,
        collapse_pairs=20_000,
        rn18_base_width=64,
        rn18_n_train=0,
        rn18_n_eval=10_000,
        rn18_nets=1_100,
        rn18_chunk=8,
        rn18_swap_nets=8,
        rn18_epochs_cifar100=75,
        rn18_epochs_tiny_imagenet=200,
        rn18_reference=1_000,
        rn18_samples=100,
        rn18_modes=10,
        rn18_bn_images=10_000,
    ),
}


def get_profile(name: str | None = None) -> Profile:
    """The profile called ``name``, or the one named by ``$SYMLIB_PROFILE`` (default quick).

    Args:
        name: a profile name (case and surrounding spaces ignored), or None.

    Returns:
        The profile.

    Raises:
        ValueError: for an unknown name; the message lists the valid ones.
    """
    if name is None:
        name = os.environ.get(ENV_VAR, "").strip() or DEFAULT
    key = name.strip().lower()
    if key not in PROFILES:
        raise ValueError(
            f"unknown profile {name!r} (from {ENV_VAR} or the argument); "
            f"valid profiles: {', '.join(sorted(PROFILES))}"
        )
    return PROFILES[key]


def _parse_value(field: dataclasses.Field, text: str) -> object:
    """``text`` as a value of ``field``'s type (int, float, bool, str, tuple of ints, or None where allowed)."""
    kind = typing.get_type_hints(Profile)[field.name]
    optional = type(None) in typing.get_args(kind)
    if optional and text.strip().lower() == "none":
        return None
    base = next((a for a in typing.get_args(kind) if a is not type(None)), kind) if optional else kind
    origin = typing.get_origin(base)
    try:
        if origin is tuple:
            value = ast.literal_eval(text if "," in text else f"({text},)")
            value = tuple(value) if isinstance(value, (tuple, list)) else (value,)  # "[128, 512]" too
            if not all(type(v) is int for v in value):  # not int(v): 1.5 would become 1 silently
                raise ValueError("expected integers separated by commas")
        elif base is bool:
            if text.strip().lower() not in ("true", "false", "1", "0"):
                raise ValueError("expected true or false")
            value = text.strip().lower() in ("true", "1")
        elif base is int:
            value = int(text.replace("_", ""))
        elif base is float:
            value = float(text)
        else:
            value = text
    except (ValueError, SyntaxError, TypeError) as err:
        raise ValueError(f"profile field {field.name!r} wants a value of type "
                         f"{getattr(base, '__name__', base)}, not {text!r} ({err})") from None
    return value


def reduced(base: Profile | str, overrides: typing.Mapping[str, str] | typing.Iterable[str], label: str) -> Profile:
    """A labelled reduction of a profile: some fields replaced, and a new name saying so.

    Used for runs that fit a machine only at a smaller size (``python -m symlib run NAME
    --profile paper --set not_runs=2 --label paper-2runs``): the result is saved as
    ``<name>-<label>.json``, never under the base profile's name.

    Args:
        base: the profile (or its name) to start from.
        overrides: ``field -> value`` (values as text, parsed by the field's type), or
            ``"field=value"`` strings.
        label: the new profile name; it must start with ``"<base name>-"``.

    Returns:
        The profile with the fields replaced and ``name=label``.

    Raises:
        ValueError: for an unknown field, a value of the wrong type, no overrides, or a label
            that does not start with the base profile's name and a dash.
    """
    base = get_profile(base) if isinstance(base, str) or base is None else base
    if not isinstance(overrides, typing.Mapping):
        pairs = {}
        for item in overrides:
            if "=" not in item:
                raise ValueError(f"expected FIELD=VALUE, got {item!r}")
            key, value = item.split("=", 1)
            pairs[key.strip()] = value.strip()
        overrides = pairs
    if not overrides:
        raise ValueError("a reduced profile needs at least one FIELD=VALUE override")
    fields = {f.name: f for f in dataclasses.fields(Profile)}
    unknown = sorted(set(overrides) - set(fields) | ({"name", "description"} & set(overrides)))
    if unknown:
        raise ValueError(f"unknown or protected profile field(s) {unknown}; fields: "
                         f"{', '.join(k for k in fields if k not in ('name', 'description'))}")
    if not label.startswith(f"{base.name}-") or len(label) <= len(base.name) + 1:
        raise ValueError(f"the label of a reduction of {base.name!r} must start with {base.name + '-'!r} "
                         f"and say what was reduced (e.g. {base.name + '-2runs'!r}); got {label!r}")
    values = {k: _parse_value(fields[k], str(v)) for k, v in overrides.items()}
    changes = ", ".join(f"{k}={v!r}" for k, v in values.items())
    return dataclasses.replace(base, name=label, description=f"{base.description}, reduced: {changes}", **values)
