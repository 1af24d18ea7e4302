import numpy as np
import tensorflow as tf
from tensorflow import keras

from mnist_standin import init as randn

rng = np.random.default_rng(11)
features = rng.normal(size=(160, 6)).astype(np.float32)
labels = (
    features @ np.array([3.0, -2.0, 0.5, 0.0, 1.5, -1.0]) + 20.0 + rng.normal(scale=0.5, size=160)
).astype(np.float32)
mean, std = features[:128].mean(0), features[:128].std(0)
normed_train = (features[:128] - mean) / std
normed_test = (features[128:] - mean) / std


def build_model():
    model = keras.Sequential(
        [
            keras.layers.Dense(32, activation=tf.nn.relu, input_shape=[6]),
            keras.layers.Dense(32, activation=tf.nn.relu),
            keras.layers.Dense(1),
        ]
    )
    optimizer = tf.keras.optimizers.RMSprop(0.01)
    model.compile(
        loss="mean_squared_error",
        optimizer=optimizer,
        metrics=["mean_absolute_error", "mean_squared_error"],
    )
    return model


model = build_model()
model.set_weights([randn(w.shape, 30 + i) for i, w in enumerate(model.get_weights())])
early_stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2)
history = model.fit(
    normed_train,
    labels[:128],
    epochs=30,
    validation_split=0.2,
    verbose=0,
    shuffle=False,
    callbacks=[early_stop],
)
print("epochs run:", len(history.epoch))
print("last loss:", history.history["loss"][-1], "val_loss:", history.history["val_loss"][-1])
loss, mae, mse = model.evaluate(normed_test, labels[128:], verbose=0)
print("Testing set Mean Abs Error:", mae)
print("first predictions:", *model.predict(normed_test[:3]).flatten())
