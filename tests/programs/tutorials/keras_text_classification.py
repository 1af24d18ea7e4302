import numpy as np
import tensorflow as tf
from tensorflow import keras

from mnist_standin import init as randn

vocab_size = 200
rng = np.random.default_rng(3)
lengths = rng.integers(5, 40, 300)
labels = rng.integers(0, 2, 300)
reviews = [
    list(rng.integers(1 + 100 * y, 100 + 100 * y, n) % vocab_size) for n, y in zip(lengths, labels)
]
data = keras.preprocessing.sequence.pad_sequences(reviews, value=0, padding="post", maxlen=32)
x_train, y_train = data[:200], labels[:200]
x_val, y_val = data[200:260], labels[200:260]
x_test, y_test = data[260:], labels[260:]

model = keras.Sequential()
model.add(keras.layers.Embedding(vocab_size, 16, input_length=32))
model.add(keras.layers.GlobalAveragePooling1D())
model.add(keras.layers.Dense(16, activation=tf.nn.relu))
model.add(keras.layers.Dense(1, activation=tf.nn.sigmoid))
model.set_weights([randn(w.shape, 10 + i, 0.3) for i, w in enumerate(model.get_weights())])
model.compile(optimizer=tf.train.AdamOptimizer(0.01), loss="binary_crossentropy", metrics=["acc"])
history = model.fit(
    x_train,
    y_train,
    epochs=4,
    batch_size=32,
    shuffle=False,
    validation_data=(x_val, y_val),
    verbose=0,
)
for i in range(4):
    print(
        "epoch",
        i + 1,
        "loss",
        history.history["loss"][i],
        "val_loss",
        history.history["val_loss"][i],
    )
results = model.evaluate(x_test, y_test, verbose=0)
print("test loss and accuracy:", results[0], results[1])
print("padded:", data.shape, int(data[0, -1]))
