import numpy as np
import tensorflow as tf
from tensorflow import keras

import mnist_standin as input_data
from mnist_standin import init as randn

data = input_data.read_data_sets("/tmp/data/", one_hot=False)
train_images = data.train.images.reshape(-1, 28, 28)
train_labels = data.train.labels
test_images = data.test.images.reshape(-1, 28, 28)
test_labels = data.test.labels
class_names = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
]

model = keras.Sequential(
    [
        keras.layers.Flatten(input_shape=(28, 28)),
        keras.layers.Dense(128, activation=tf.nn.relu),
        keras.layers.Dense(10, activation=tf.nn.softmax),
    ]
)
model.set_weights([randn(w.shape, i) for i, w in enumerate(model.get_weights())])
model.compile(
    optimizer=tf.train.AdamOptimizer(), loss="sparse_categorical_crossentropy", metrics=["accuracy"]
)
history = model.fit(train_images, train_labels, epochs=3, shuffle=False, verbose=0)
for epoch, loss in enumerate(history.history["loss"]):
    print("epoch", epoch + 1, "loss", loss)
test_loss, test_acc = model.evaluate(test_images, test_labels, verbose=0)
print("Test loss:", test_loss, "Test accuracy:", test_acc)
predictions = model.predict(test_images)
print("first prediction:", class_names[int(np.argmax(predictions[0]))], predictions[0].max())
print("params:", model.count_params())
