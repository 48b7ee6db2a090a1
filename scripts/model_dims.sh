# Sourced by the scripts that run many models: model_dims NAME prints the
# --dim options a model needs beyond --batch (as tests/shared_models.h binds
# them). NAME is a shared model's file name without .onnx or an example's.
model_dims() {
  case "$1" in
    *roberta*) echo "--dim seq_len=128" ;;
    *t5-encoder* | *distilbert*) echo "--dim sequence=128" ;;
    *gpt2-*) echo "--dim input1_dynamic_axes_2=1 --dim input1_dynamic_axes_3=128" ;;
    *fcn-resnet*) echo "--dim height=224 --dim width=224" ;;
    *tiny-yolov3*) echo "--dim input_1:2=416 --dim input_1:3=416" ;;
    *gpt2_tiny*) echo "--dim seq_len=16 --dim past_seq_len=16 --dim total_seq_len=32" ;;
    *attention_head*) echo "--dim sequence_len=100 --dim batch=100" ;;
    bert_base_layer | gpt2_block) echo "--dim S=128" ;;
  esac
}
