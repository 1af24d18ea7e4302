"""TensorFlow's formats: GraphDef, SavedModel and V2 checkpoints, read and written.

The protobuf schemas under ``proto/`` carry TensorFlow's field numbers in a package of our own;
no TensorFlow is needed at run time.
"""
