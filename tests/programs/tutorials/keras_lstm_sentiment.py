import numpy as np
import tensorflow as tf

from mnist_standin import init as randn

max_features, maxlen = 50, 12
rng = np.random.default_rng(5)
x = rng.integers(1, max_features, (96, maxlen))
y = (x[:, :4].mean(1) > max_features / 2).astype(np.int64)
x[:, :3] = 0  # front padding, masked by the embedding

model = tf.keras.Sequential()
model.add(tf.keras.layers.Embedding(max_features, 8, mask_zero=True, input_length=maxlen))
model.add(tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(6)))
model.add(tf.keras.layers.Dense(1, activation="sigmoid"))
model.set_weights([randn(w.shape, 40 + i, 0.3) for i, w in enumerate(model.get_weights())])
model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
history = model.fit(
    x[:64],
    y[:64],
    batch_size=16,
    epochs=3,
    shuffle=False,
    verbose=0,
    validation_data=[x[64:], y[64:]],
)
print("loss:", history.history["loss"])
print("val_loss:", history.history["val_loss"])
score, acc = model.evaluate(x[64:], y[64:], batch_size=16, verbose=0)
print("Test score:", score, "Test accuracy:", acc)
