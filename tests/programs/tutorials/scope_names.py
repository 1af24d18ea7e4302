import tensorflow as tf

with tf.name_scope("a_name_scope"):
    initializer = tf.constant_initializer(value=1)
    var1 = tf.get_variable(name="var1", shape=[1], dtype=tf.float32, initializer=initializer)
    var2 = tf.Variable(name="var2", initial_value=[2], dtype=tf.float32)
    var21 = tf.Variable(name="var2", initial_value=[2.1], dtype=tf.float32)
    var22 = tf.Variable(name="var2", initial_value=[2.2], dtype=tf.float32)

with tf.variable_scope("a_variable_scope") as scope:
    initializer = tf.constant_initializer(value=3)
    var3 = tf.get_variable(name="var3", shape=[1], dtype=tf.float32, initializer=initializer)
    scope.reuse_variables()
    var3_reuse = tf.get_variable(name="var3")
    var4 = tf.Variable(name="var4", initial_value=[4], dtype=tf.float32)
    var4_reuse = tf.Variable(name="var4", initial_value=[4], dtype=tf.float32)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for v in (var1, var2, var21, var22, var3, var3_reuse, var4, var4_reuse):
        print(v.name, "%.2f" % sess.run(v)[0])
