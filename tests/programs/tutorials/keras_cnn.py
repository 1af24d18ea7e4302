import tensorflow as tf

import mnist_standin as input_data
from mnist_standin import init as randn

mnist = input_data.read_data_sets("/tmp/data/", one_hot=False)
x_train = mnist.train.images.reshape(-1, 28, 28, 1)[:192]
x_test = mnist.test.images.reshape(-1, 28, 28, 1)[:64]
y_train = tf.keras.utils.to_categorical(mnist.train.labels[:192], 10)
y_test = tf.keras.utils.to_categorical(mnist.test.labels[:64], 10)

model = tf.keras.models.Sequential(
    [
        tf.keras.layers.Conv2D(8, (3, 3), activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D((2, 2)),
        tf.keras.layers.Conv2D(16, (3, 3), activation="relu", padding="same"),
        tf.keras.layers.MaxPooling2D(pool_size=2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
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
