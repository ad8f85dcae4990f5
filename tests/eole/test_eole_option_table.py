"""eole's config fields of ours are the table's (``option_table``): the options eole takes, on the
``PredictConfig`` that ``eole predict`` uses (patched through the import hook), each with the table's type,
default and help (marked "(onmt-optimal)"), and no other option of the table."""
from onmt_optimal.option_table import EOLE, TABLE


def test_predict_config_fields_are_the_table():
    from eole.bin.run.predict import Predict

    fields = Predict.config_class.model_fields
    for option in TABLE:
        if EOLE not in option.toolkits:
            assert option.name not in fields, option.name
            continue
        field = fields[option.name]
        assert field.annotation == option.annotation, option.name
        assert field.default == option.default_for(EOLE), option.name
        assert field.description == "(onmt-optimal) " + option.help_for(EOLE), option.name
