"""Score normalization: z-, t-, s- and adaptive s-norm from cohort score tables or embeddings.

Cohort statistics (per id: the mean and standard deviation of its scores against a cohort of
impostors, over the whole cohort or its top k) are computed out of core from cohort score
tables, or by blocks of BLAS products from embeddings, into a table written once and reused;
:func:`normalize` joins them lazily to any number of trials; :class:`Normalization` holds
the methods and their options (cohort size, ``ddof``, convention, leakage guard). See
``docs/norm.md``.

May import: errors, checks, kernels, io, frames, stats.
"""

from scoreframe.norm._embeddings import Embeddings, read_embeddings
from scoreframe.norm._methods import CONVENTIONS, METHODS, Convention, Normalization
from scoreframe.norm._normalize import LAYOUTS, STATISTICS_SCHEMA, cohort_statistics, normalize

__all__ = ["CONVENTIONS", "LAYOUTS", "METHODS", "STATISTICS_SCHEMA", "Convention",
           "Embeddings", "Normalization", "cohort_statistics", "normalize", "read_embeddings"]
