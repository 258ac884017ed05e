"""EnsLoss's claims as data.

The paper (Sec. 5, CIFAR-10 45 class pairs) reports EnsLoss against each fixed loss as
counts of pairs where it is better / tied / worse, e.g. ResNet34 vs BCE: 41 / 4 / 0.
Here every class pair is a task; per pair the accuracy difference is tested over seeds.
"""

from reprolab.core.claims import Claim, PairedMajority

_SETTING = "CIFAR-10, 45 class pairs, ResNet34; counts of pairs better / tie / worse"

CLAIMS = (
    Claim(
        id="vs_bce",
        statement="EnsLoss is at least as accurate as BCE (logistic loss) on most class pairs",
        paper_value="41 / 4 / 0 of 45",
        paper_setting=_SETTING,
        metric="test_acc",
        check=PairedMajority(method="ensloss", baseline="bce"),
    ),
    Claim(
        id="vs_hinge",
        statement="EnsLoss is at least as accurate as the hinge loss on most class pairs",
        paper_value="better on most of 45 pairs",
        paper_setting=_SETTING.replace("ResNet34; counts", "several CNNs; reported as counts"),
        metric="test_acc",
        check=PairedMajority(method="ensloss", baseline="hinge"),
    ),
    Claim(
        id="vs_exp",
        statement="EnsLoss is at least as accurate as the exponential loss on most class pairs",
        paper_value="better on most of 45 pairs",
        paper_setting=_SETTING.replace("ResNet34; counts", "several CNNs; reported as counts"),
        metric="test_acc",
        check=PairedMajority(method="ensloss", baseline="exp"),
    ),
    Claim(
        id="vs_best_fixed",
        statement=(
            "EnsLoss is at least as accurate as the best fixed loss of each pair "
            "(chosen on validation accuracy) on a majority of pairs"
        ),
        paper_value="EnsLoss best or tied on most pairs",
        paper_setting="CIFAR-10 class pairs, all architectures",
        metric="test_acc",
        check=PairedMajority(
            method="ensloss",
            baseline="best",
            baselines=("bce", "hinge", "exp"),
            select_metric="val_acc",
        ),
    ),
)
