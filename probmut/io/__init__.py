"""Every file probmut reads or writes, each format in one module: populations
(:mod:`~probmut.io.populations`), manifests (:mod:`~probmut.io.manifest`), the result
cache (:mod:`~probmut.io.cache`), per-input outcomes (:mod:`~probmut.io.outcomes`),
instance symptom records (:mod:`~probmut.io.records`), all written through the one
atomic writer (:mod:`~probmut.io.atomic`)."""
