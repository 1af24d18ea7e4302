import tensorflow as tf
from tensorflow.keras.layers import Conv2D, Dense, Flatten, MaxPooling2D
from tensorflow.keras.models import Sequential
from tensorflow.keras.utils import to_categorical

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=False)
x_train = mnist.train.images.reshape(-1, 28, 28, 1)[:192]
x_test = mnist.test.images.reshape(-1, 28, 28, 1)[:64]
y_train = to_categorical(mnist.train.labels[:192], 10)
y_test = to_categorical(mnist.test.labels[:64], 10)

model = Sequential(
    [
        Conv2D(8, (3, 3), activation="relu", input_shape=(28, 28, 1)),
        MaxPooling2D((2, 2)),
        Conv2D(16, (3, 3), activation="relu", padding="same"),
        MaxPooling2D(pool_size=2),
        Flatten(),
        Dense(32, activation="relu"),
        Dense(10, activation="softmax"),
    ]
)
model.set_weights([randn(w.shape, 20 + i) for i, w in enumerate(model.get_weights())])
model.compile(
    optimizer=tf.keras.optimizers.SGD(lr=0.05, momentum=0.9),
    loss="categorical_crossentropy",
    metrics=["accuracy"],
)
history = model.fit(x_train, y_train, batch_size=64, epochs=2, shuffle=False, verbose=0)
print("losses:", history.history["loss"])
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", score[0])
print("Test accuracy:", score[1])
print("output shape:", model.output_shape, "layers:", len(model.layers))
