"""Every file probmut reads or writes, each format in one module: populations
(:mod:`~probmut.io.populations`), manifests (:mod:`~probmut.io.manifest`), the result
cache (:mod:`~probmut.io.cache`), per-input outcomes (:mod:`~probmut.io.outcomes`), all
written through the one atomic writer (:mod:`~probmut.io.atomic`)."""
