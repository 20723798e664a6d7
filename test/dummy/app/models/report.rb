# frozen_string_literal: true

class Report < ApplicationRecord; end
