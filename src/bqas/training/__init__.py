"""Training and fitting of the learned scorers (offline tier, trust tier), and the data builders they read.

Only the commands that train or fit (``bqas grounding-model train``, ``train-verifier``, ``fit-cascade``),
the benchmarks and the tests import this package. The run-time path (``bqas serve``, ``bqas run``, the
judges) reads the shipped weights and cards only (:mod:`bqas.offline.grounding_model`,
:mod:`bqas.offline.verifier`), so serving never loads scikit-learn's fitting code, torch or the dataset
loaders.

* :mod:`.grounding`: the learned grounding scorer's dataset loaders (:mod:`.grounding.datasets`), its
  synthetic perturbations (:mod:`.grounding.synthetic`) and its fit (:mod:`.grounding.train`);
* :mod:`.verifier`: the verifier's training pairs (:mod:`.verifier.datasets`, :mod:`.verifier.perturb`,
  :mod:`.verifier.suite_overlap`, assembled by :mod:`.verifier.pairs`), its network and training loop
  (:mod:`.verifier.net`, :mod:`.verifier.e5_file`, :mod:`.verifier.train`; torch, a development dependency)
  and the cascade's fit (:mod:`.verifier.fit`);
* :mod:`.p_reject`: the fit of the trust tier's offline ``p_reject`` models (``benchmarks/trust/train_offline.py``);
* :mod:`.licences`: which datasets may be used for what (measure-only ones are refused for training,
  fitting and choosing).
"""
