"""Semi-Clipped's claims as data.

The paper (Bendidi et al., arXiv 2505.21317, Tables 2-4) reports recall of known
biological relationships (CORUM/HuMAP/Reactome/StringDB) among nearest neighbours of
transcriptomics embeddings on unseen perturbations and batches. Here relationships are
the simulator's planted pathways; every (simulator draw, seed) is one pair.
"""

from reprolab.core.claims import Claim, PairedDifference

_SETTING = (
    "Replogle/L1000 transcriptomics with Phenom image embeddings; unseen perturbations and batches"
)

_BASELINES = {
    "raw": "raw transcriptomics features",
    "tvn": "TVN-corrected features",
    "joint_clip": "CLIP training of adapters on both sides",
    "mse_distill": "MSE distillation of image embeddings",
}

CLAIMS = tuple(
    Claim(
        id=f"beats_{b}",
        statement=f"Semi-Clipped (+PEA) recalls more same-pathway neighbours out of distribution than {what}",
        paper_value="Semi-Clipped best on every benchmark",
        paper_setting=_SETTING,
        metric="recall_ood",
        check=PairedDifference(method="semiclipped_pea", baseline=b),
    )
    for b, what in _BASELINES.items()
) + (
    Claim(
        id="pea_adds",
        statement="PEA augmentation raises the recall of Semi-Clipped out of distribution",
        paper_value="+17% to +55% relative",
        paper_setting=_SETTING,
        metric="recall_ood",
        check=PairedDifference(method="semiclipped_pea", baseline="semiclipped"),
    ),
    Claim(
        id="semiclipped_beats_tvn",
        statement="Semi-Clipped without PEA recalls more same-pathway neighbours than TVN alone",
        paper_value="Semi-Clipped > TVN baseline",
        paper_setting=_SETTING,
        metric="recall_ood",
        check=PairedDifference(method="semiclipped", baseline="tvn"),
    ),
)
