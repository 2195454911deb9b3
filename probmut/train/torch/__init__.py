"""PyTorch models as probmut trains and mutates them: a library the trainer seam plugs in.

Nothing else in probmut imports this package, and it imports neither TensorFlow nor
Keras: a Keras run never imports torch, a torch run never TensorFlow.
"""
