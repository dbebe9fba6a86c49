"""add migrate-cron job_attempts run-time index

Revision ID: b251e649321c
Revises: 3fdb5266566e

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, postgresql

# revision identifiers, used by Alembic.
revision: str = 'b251e649321c'
down_revision: Union[str, Sequence[str], None] = '3fdb5266566e'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_index('job_attempts_done_idx', 'job_attempts', ['outcome', 'finished_at', 'kind', 'started_at'], unique=False)


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index('job_attempts_done_idx', table_name='job_attempts')
