"""cplearn's claims as data.

Every unit carries the unit parameters ``f`` (embedding dimension) and ``ratio`` (c / f,
the number of codes per embedding dimension). The official CIFAR configuration has
f = 2048, c = 16384, i.e. c / f = 8 (PAPER_RATIO); the collapse claims are tested there
(core ``Where(check, ratio=8)``), and the sweep over c / f gives the trends.

Rules, fixed before any run (core checks; 95% t-intervals over every (task, seed)):
- ``no_dimensional_collapse``: effective rank (Roy & Vetterli) of the covariance of
  CPLearn's test embeddings e, divided by their dimension f (metric ``erank_frac``), at
  c / f = 8; reproduced when the interval lies above 0.10 (a tenth of the dimensions
  carry the spectrum's entropy; full collapse gives 1 / f).
- ``no_cluster_collapse``: normalised entropy of the usage histogram of CPLearn's c codes
  on the test split (argmax assignments; 1 = uniform use, 0 = one code), at c / f = 8;
  reproduced when the interval lies above 0.5 (more effective codes than
  sqrt(#test points)).
- ``no_intracluster_collapse``: mean within-cluster variance of the L2-normalised test
  embeddings (k-means, k = #classes; at most 1 for unit vectors, 0 when clusters collapse
  to points), at c / f = 8; reproduced when the interval lies above 0.05.
- ``probe_vs_barlow``: linear-probe accuracy of CPLearn at c / f = 8 minus Barlow Twins,
  paired by (task, seed); reproduced when the interval lies above -0.02.
- ``noprior_collapses``: code-usage entropy of CPLearn minus the ablation without the
  prior-matching term, both at c / f = 8, paired by (task, seed); reproduced when the
  interval lies above 0.
- ``erank_rises_with_ratio``, ``usage_rises_with_ratio``: CPLearn's ``erank_frac`` and
  ``usage_entropy`` rise with c / f (core ``Trend``: per (task, seed) the Spearman
  correlation with the ratio, verdict by a one-sided sign test over the (task, seed)
  groups). More codes per dimension is the direction of the paper's configuration: its
  guarantees rest on c quasi-orthogonal random codes, and its official configuration
  uses eight codes per embedding dimension.
"""

from __future__ import annotations

from reprolab.core.claims import Claim, PairedDifference, Threshold, Trend, Where

#: c / f of the official CIFAR configuration (f = 2048, c = 16384)
PAPER_RATIO = 8

_SETTING = "SVHN, CIFAR-10, CIFAR-100, ImageNet-100 (abstract); ResNet backbones"
_NO_NUMBER = "no number in the card or abstract"
_AT_RATIO = "at c / f = 8 (official CIFAR config f = 2048, c = 16384)"

CLAIMS = (
    Claim(
        id="no_dimensional_collapse",
        statement=(
            "At c / f = 8, CPLearn's embeddings are decorrelated and avoid dimensional collapse "
            "(effective rank of their covariance > 0.10 f)"
        ),
        paper_value=f"'avoids ... dimensional collapse' (abstract); {_NO_NUMBER}",
        paper_setting=f"{_SETTING}; {_AT_RATIO}",
        metric="erank_frac",
        check=Where(
            Threshold(variant="cplearn", bound=0.10, higher_is_better=True), ratio=PAPER_RATIO
        ),
    ),
    Claim(
        id="no_cluster_collapse",
        statement=(
            "At c / f = 8, CPLearn uses its codes evenly: no cluster collapse (normalised code-usage "
            "entropy on the test split > 0.5)"
        ),
        paper_value=f"'avoids ... cluster collapse' (abstract); {_NO_NUMBER}",
        paper_setting=f"{_SETTING}; {_AT_RATIO}",
        metric="usage_entropy",
        check=Where(
            Threshold(variant="cplearn", bound=0.5, higher_is_better=True), ratio=PAPER_RATIO
        ),
    ),
    Claim(
        id="no_intracluster_collapse",
        statement=(
            "At c / f = 8, CPLearn's clusters keep their spread: no intra-cluster collapse (mean "
            "within-cluster variance of normalised embeddings > 0.05)"
        ),
        paper_value=f"'avoids ... intracluster collapse' (abstract); {_NO_NUMBER}",
        paper_setting=f"{_SETTING}; {_AT_RATIO}",
        metric="intra_var",
        check=Where(
            Threshold(variant="cplearn", bound=0.05, higher_is_better=True), ratio=PAPER_RATIO
        ),
    ),
    Claim(
        id="probe_vs_barlow",
        statement=(
            "At c / f = 8, CPLearn's linear-probe accuracy is at least that of Barlow Twins, within a "
            "margin of 2 points"
        ),
        paper_value=(
            "'strong generalization in ... linear classification' vs feature-decorrelation "
            f"methods (Barlow Twins); {_NO_NUMBER}"
        ),
        paper_setting=f"{_SETTING}; {_AT_RATIO}",
        metric="probe_acc",
        check=Where(
            PairedDifference(
                method="cplearn", baseline="barlow_twins", higher_is_better=True, margin=0.02
            ),
            ratio=PAPER_RATIO,
        ),
    ),
    Claim(
        id="noprior_collapses",
        statement=(
            "at c / f = 8, without the prior-matching term the codes collapse: lower code-usage entropy "
            "than CPLearn"
        ),
        paper_value=(
            f"the prior-matching term is what prevents cluster collapse (card); {_NO_NUMBER}"
        ),
        paper_setting=f"ablation of the loss (card); {_AT_RATIO}",
        metric="usage_entropy",
        check=Where(
            PairedDifference(method="cplearn", baseline="cplearn_noprior", higher_is_better=True),
            ratio=PAPER_RATIO,
        ),
    ),
    Claim(
        id="erank_rises_with_ratio",
        statement=(
            "more codes per embedding dimension keeps more dimensions alive: CPLearn's "
            "effective rank / f rises with c / f"
        ),
        paper_value=(
            "official configuration c / f = 8 (f = 2048, c = 16384); the guarantees rest on "
            f"c quasi-orthogonal random codes; {_NO_NUMBER} for a sweep"
        ),
        paper_setting=_SETTING,
        metric="erank_frac",
        check=Trend("cplearn", "ratio", increasing=True),
    ),
    Claim(
        id="usage_rises_with_ratio",
        statement=(
            "more codes per embedding dimension spreads the assignments: CPLearn's "
            "normalised code-usage entropy rises with c / f"
        ),
        paper_value=(
            "official configuration c / f = 8 (f = 2048, c = 16384); 'avoids ... cluster "
            f"collapse' (abstract); {_NO_NUMBER} for a sweep"
        ),
        paper_setting=_SETTING,
        metric="usage_entropy",
        check=Trend("cplearn", "ratio", increasing=True),
    ),
)
