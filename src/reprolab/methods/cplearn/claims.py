"""cplearn's claims as data.

Rules, fixed before any run (core checks; 95% t-intervals over every (task, seed)):
- ``no_dimensional_collapse``: effective rank (Roy & Vetterli) of the covariance of
  CPLearn's test embeddings e, divided by their dimension f (metric ``erank_frac``);
  reproduced when the interval lies above 0.10 (a tenth of the dimensions carry the
  spectrum's entropy; full collapse gives 1 / f).
- ``no_cluster_collapse``: normalised entropy of the usage histogram of CPLearn's c codes
  on the test split (argmax assignments; 1 = uniform use, 0 = one code); reproduced when
  the interval lies above 0.5 (more effective codes than sqrt(#test points)).
- ``no_intracluster_collapse``: mean within-cluster variance of the L2-normalised test
  embeddings (k-means, k = #classes; at most 1 for unit vectors, 0 when clusters collapse
  to points); reproduced when the interval lies above 0.05.
- ``probe_vs_barlow``: linear-probe accuracy of CPLearn minus Barlow Twins, paired by
  (task, seed); reproduced when the interval lies above -0.02 (within 2 points, or better).
- ``noprior_collapses``: code-usage entropy of CPLearn minus the ablation without the
  prior-matching term, paired by (task, seed); reproduced when the interval lies above 0.
"""

from reprolab.core.claims import Claim, PairedDifference, Threshold

_SETTING = "SVHN, CIFAR-10, CIFAR-100, ImageNet-100 (abstract); ResNet backbones"
_NO_NUMBER = "no number in the card or abstract"

CLAIMS = (
    Claim(
        id="no_dimensional_collapse",
        statement=(
            "CPLearn's embeddings are decorrelated and avoid dimensional collapse "
            "(effective rank of their covariance > 0.10 f)"
        ),
        paper_value=f"'avoids ... dimensional collapse' (abstract); {_NO_NUMBER}",
        paper_setting=_SETTING,
        metric="erank_frac",
        check=Threshold(variant="cplearn", bound=0.10, higher_is_better=True),
    ),
    Claim(
        id="no_cluster_collapse",
        statement=(
            "CPLearn uses its codes evenly: no cluster collapse (normalised code-usage "
            "entropy on the test split > 0.5)"
        ),
        paper_value=f"'avoids ... cluster collapse' (abstract); {_NO_NUMBER}",
        paper_setting=_SETTING,
        metric="usage_entropy",
        check=Threshold(variant="cplearn", bound=0.5, higher_is_better=True),
    ),
    Claim(
        id="no_intracluster_collapse",
        statement=(
            "CPLearn's clusters keep their spread: no intra-cluster collapse (mean "
            "within-cluster variance of normalised embeddings > 0.05)"
        ),
        paper_value=f"'avoids ... intracluster collapse' (abstract); {_NO_NUMBER}",
        paper_setting=_SETTING,
        metric="intra_var",
        check=Threshold(variant="cplearn", bound=0.05, higher_is_better=True),
    ),
    Claim(
        id="probe_vs_barlow",
        statement=(
            "CPLearn's linear-probe accuracy is at least that of Barlow Twins, within a "
            "margin of 2 points"
        ),
        paper_value=(
            "'strong generalization in ... linear classification' vs feature-decorrelation "
            f"methods (Barlow Twins); {_NO_NUMBER}"
        ),
        paper_setting=_SETTING,
        metric="probe_acc",
        check=PairedDifference(
            method="cplearn", baseline="barlow_twins", higher_is_better=True, margin=0.02
        ),
    ),
    Claim(
        id="noprior_collapses",
        statement=(
            "without the prior-matching term the codes collapse: lower code-usage entropy "
            "than CPLearn"
        ),
        paper_value=(
            f"the prior-matching term is what prevents cluster collapse (card); {_NO_NUMBER}"
        ),
        paper_setting="ablation of the loss (card)",
        metric="usage_entropy",
        check=PairedDifference(method="cplearn", baseline="cplearn_noprior", higher_is_better=True),
    ),
)
