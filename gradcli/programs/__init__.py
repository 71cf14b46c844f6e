"""--show-code: each command's tape column as a short, runnable TensorFlow program."""
